package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/keyenc"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// BenchmarkListGet reads the newest 100 items of a 1000-item list (16-byte
// values) as ebb serve does: ebb.Open's stack (the embedded backend on
// disk, the expiry decorator, the lists feature) behind the server's
// handler. Its sub-benchmarks, in one run:
//
//   - raw-pebble: the baseline, the same 100 keys and values copied out of
//     one Pebble iterator;
//   - in-process: lists.Service.Get;
//   - handler: the whole HTTP handler (routing, auth-free admission,
//     metrics, JSON) without a network; handler-msgpack in MessagePack;
//   - hot-1-msgpack and hot-1-json: a hot listener over one kept-alive
//     connection;
//   - the same four with -kept: answered from the page the server kept
//     (listcache.go), where the others' server keeps none; and
//     handler-msgpack-missed, a server whose reads all miss the kept
//     pages, for what keeping costs a read that finds nothing;
//   - http-1 and http-64: over loopback TCP with keep-alive, from one
//     connection, and from 64 goroutines per CPU on as many connections.
//
// items/s is the figure to compare.
func BenchmarkListGet(b *testing.B) {
	e := newListBench(b)
	ctx := context.Background()
	b.Run("raw-pebble", func(b *testing.B) {
		opts := &pebble.IterOptions{LowerBound: e.prefix, UpperBound: keyenc.PrefixEnd(e.prefix)}
		b.ReportAllocs()
		for b.Loop() {
			it, err := e.raw.DB().NewIter(opts)
			if err != nil {
				b.Fatal(err)
			}
			keys, values := make([][]byte, 0, listBenchGet), make([][]byte, 0, listBenchGet)
			for ok := it.First(); ok && len(keys) < listBenchGet; ok = it.Next() {
				v, err := it.ValueAndErr()
				if err != nil {
					b.Fatal(err)
				}
				keys = append(keys, bytes.Clone(it.Key()))
				values = append(values, bytes.Clone(v))
			}
			if err := it.Close(); err != nil || len(keys) != listBenchGet || len(values) != listBenchGet {
				b.Fatalf("raw read: %d keys, %v", len(keys), err)
			}
		}
		reportListItems(b)
	})
	b.Run("in-process", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			items, err := e.db.Lists().Get(ctx, listBenchFeature, listBenchEntity, time.Time{}, listBenchGet)
			if err != nil || len(items) != listBenchGet {
				b.Fatalf("get: %d items, %v", len(items), err)
			}
		}
		reportListItems(b)
	})
	b.Run("handler", func(b *testing.B) {
		e.handlerGet(b, e.handler, "", 50*listBenchGet)
	})
	b.Run("handler-msgpack", func(b *testing.B) {
		e.handlerGet(b, e.handler, "application/msgpack", 20*listBenchGet)
	})
	b.Run("hot-1-msgpack", func(b *testing.B) {
		e.hotGet(b, e.server, "application/msgpack")
	})
	b.Run("hot-1-json", func(b *testing.B) {
		e.hotGet(b, e.server, "application/json")
	})
	// The same reads answered from the page kept by the first
	// (listcache.go).
	b.Run("handler-kept", func(b *testing.B) {
		e.handlerGet(b, e.kept.Handler(), "", 50*listBenchGet)
	})
	b.Run("handler-msgpack-kept", func(b *testing.B) {
		e.handlerGet(b, e.kept.Handler(), "application/msgpack", 20*listBenchGet)
	})
	// Every read missing the kept pages (a server keeping one byte at
	// most): what keeping costs a read that finds nothing.
	b.Run("handler-msgpack-missed", func(b *testing.B) {
		e.handlerGet(b, e.missed.Handler(), "application/msgpack", 20*listBenchGet)
	})
	b.Run("hot-1-msgpack-kept", func(b *testing.B) {
		e.hotGet(b, e.kept, "application/msgpack")
	})
	b.Run("hot-1-json-kept", func(b *testing.B) {
		e.hotGet(b, e.kept, "application/json")
	})
	b.Run("http-1", func(b *testing.B) {
		client := e.client(1)
		b.ReportAllocs()
		for b.Loop() {
			e.get(b, client)
		}
		reportListItems(b)
	})
	b.Run("http-64", func(b *testing.B) {
		client := e.client(64)
		b.ReportAllocs()
		b.SetParallelism(32) // 64 goroutines on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				e.get(b, client)
			}
		})
		reportListItems(b)
	})
}

const (
	listBenchEntity = "user-000042"
	listBenchItems  = 1000
	listBenchGet    = 100
)

var listBenchFeature = lists.FeatureID{EntityType: "user", Feature: "stories", Version: ""}

type listBench struct {
	db      *ebb.DB
	raw     *ebbpebble.Store
	server  *server.Server // keeping no page: every read is the store's
	kept    *server.Server // keeping pages (the default)
	missed  *server.Server // keeping pages of at most one byte: none
	handler http.Handler
	srv     *httptest.Server
	path    string
	prefix  []byte // the list's row keys: table ID | partition | row space
}

func newListBench(b *testing.B) *listBench {
	b.Helper()
	ctx := context.Background()
	db, raw, kept := newBenchServer(b, ebbpebble.Options{})
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(server.Options{DB: db, ListCacheBytes: -1, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	missed, err := server.New(server.Options{DB: db, ListCacheBytes: 1, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := db.Lists().CreateFeature(ctx, listBenchFeature, 30*24*time.Hour); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	items := make([]lists.Item, listBenchItems)
	for i := range items {
		items[i] = lists.Item{Value: fmt.Appendf(nil, "story-%010d", i), Timestamp: now.Add(-time.Duration(i) * time.Second)}
	}
	if _, err := db.Lists().Add(ctx, listBenchFeature, listBenchEntity, items); err != nil {
		b.Fatal(err)
	}
	e := &listBench{db: db, raw: raw, server: srv, kept: kept, missed: missed, handler: srv.Handler(),
		path: "/v1/lists/user/stories/_/" + listBenchEntity + "/items?limit=100"}
	e.srv = httptest.NewServer(e.handler)
	b.Cleanup(e.srv.Close)
	// The list's rows are the keys ending a table ID with the entity's
	// encoded partition and the row space.
	tail := append(keyenc.AppendString(nil, listBenchEntity, false), 0x01)
	it, err := raw.DB().NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if k := it.Key(); len(k) > 8+len(tail) && bytes.Equal(k[8:8+len(tail)], tail) {
			e.prefix = bytes.Clone(k[:8+len(tail)])
			break
		}
	}
	if e.prefix == nil {
		b.Fatal("benchmark list not found in the database")
	}
	return e
}

func (e *listBench) client(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// get reads the list over HTTP and drains the body, as a load generator
// does; parsing it is the client's cost, not the server's.
func (e *listBench) get(b *testing.B, client *http.Client) {
	resp, err := client.Get(e.srv.URL + e.path)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || n < 50*listBenchGet {
		b.Fatalf("status %d, %d bytes, %v", resp.StatusCode, n, err)
	}
}

// handlerGet reads the list through the handler alone, with accept as its
// Accept header ("" for none), each answer at least minBytes long.
func (e *listBench) handlerGet(b *testing.B, h http.Handler, accept string, minBytes int) {
	req := httptest.NewRequest("GET", e.path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.status, w.n = 0, 0
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n < minBytes {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
	}
	reportListItems(b)
}

// hotGet reads the list on a hot listener of its own over one kept-alive
// connection, as wrk does: the request's bytes written, the answer read
// and its body drained.
func (e *listBench) hotGet(b *testing.B, s *server.Server, accept string) {
	base := server.ServeHot(b, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := "GET " + e.path + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(base, "http://") + "\r\nAccept: " + accept + "\r\n\r\n"
	br := bufio.NewReader(conn)
	b.ReportAllocs()
	for b.Loop() {
		if status, n := server.RoundTrip(b, conn, br, req); status != http.StatusOK || n < 20*listBenchGet {
			b.Fatalf("status %d, %d bytes", status, n)
		}
	}
	reportListItems(b)
}

func reportListItems(b *testing.B) {
	b.ReportMetric(float64(b.N*listBenchGet)/b.Elapsed().Seconds(), "items/s")
}

// discardWriter is a ResponseWriter that counts the body and keeps nothing.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

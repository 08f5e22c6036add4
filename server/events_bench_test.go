package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/server"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// BenchmarkWriteEvents posts 100 events of 100-byte payloads per request,
// the body bench/peers' ingest-latency sends, to POST
// /v1/indexes/{name}/events through the whole handler (routing,
// admission, metrics, strict JSON, validation) over ebb.Open's stack on
// the embedded backend, unsynced so that the figures are the CPU and the
// allocations of the code rather than the disk's. allocs/op and B/op are
// per request: the garbage the collector has to keep up with at steady
// ingest.
func BenchmarkWriteEvents(b *testing.B) {
	ctx := context.Background()
	db, _, srv := newBenchServer(b, ebbpebble.Options{NoSync: true})
	cfg := timeseries.Config{Name: "ingest", TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 7 * 24 * time.Hour}
	if _, _, err := db.Indexes().Create(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	handler := srv.Handler()
	// Bodies with distinct event ids, cycled, so that most writes are new
	// rows as under real ingest.
	const batch, bodies = 100, 64
	payload := make([]byte, 100)
	for i := range payload {
		payload[i] = byte('a' + i*7%26)
	}
	p64 := base64.StdEncoding.EncodeToString(payload)
	ts := time.Now().UTC().Add(-time.Minute).Format("2006-01-02T15:04:05.000Z")
	var body [bodies][]byte
	for k := range body {
		bb := []byte(`{"events":[`)
		for i := range batch {
			if i > 0 {
				bb = append(bb, ',')
			}
			bb = append(bb, `{"index_id":"account-`...)
			bb = strconv.AppendInt(bb, int64((k*batch+i)*31%1000), 10)
			bb = append(bb, `","event_id":"c`...)
			bb = strconv.AppendInt(bb, int64(k*batch+i), 10)
			bb = append(bb, `","timestamp":"`...)
			bb = append(bb, ts...)
			bb = append(bb, `","payload":"`...)
			bb = append(bb, p64...)
			bb = append(bb, `"}`...)
		}
		body[k] = append(bb, `]}`...)
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		k := n % bodies
		n++
		// A request is consumed by its handler; the fresh one's own
		// allocations are httptest's, the same in every variant.
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/indexes/ingest/events", bytes.NewReader(body[k]))
		req.Header.Set("Content-Type", "application/json")
		clear(w.h)
		w.status, w.n = 0, 0
		handler.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
}

// newBenchServer opens ebb.Open's stack on the embedded backend in a
// temporary directory, and a server over it that logs nothing.
func newBenchServer(b *testing.B, o ebbpebble.Options) (*ebb.DB, *ebbpebble.Store, *server.Server) {
	b.Helper()
	raw, err := ebbpebble.Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	db, err := ebb.Open(context.Background(), ebb.Options{Store: raw})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	srv, err := server.New(server.Options{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return db, raw, srv
}

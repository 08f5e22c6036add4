package peers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/server"
)

// The list-read workload of a feature store: the newest 100 items of a
// 1000-item list, 16-byte values. ebb serves it over HTTP as `ebb serve`
// does (the embedded backend on disk, synced, behind the expiry decorator);
// Redis holds the same members in a sorted set scored by timestamp and
// answers ZREVRANGE 0 99. Both are read over loopback TCP with keep-alive,
// from 1 connection and from 64.

const (
	listItems = 1000
	listGet   = 100
	entity    = "user-000042"
)

func value(i int) string { return fmt.Sprintf("story-%010d", i) }

// BenchmarkListRead runs ebb and Redis side by side; compare items/s of
// ebb-http-json (the default encoding) and ebb-http-msgpack (Accept:
// application/msgpack) to redis-zrevrange at the same connection count,
// and to static-http-*, net/http serving the same bytes from memory (what
// any Go HTTP server reaches here). The clients only drain the bodies, as
// wrk and redis-benchmark do.
func BenchmarkListRead(b *testing.B) {
	url := startEbb(b)
	rdb := startRedis(b)
	static := startStatic(b, url)
	for _, conns := range []int{1, 64} {
		for _, enc := range []struct{ name, accept string }{{"json", ""}, {"msgpack", "application/msgpack"}} {
			b.Run(fmt.Sprintf("static-http-%s/conns-%d", enc.name, conns), func(b *testing.B) {
				runHTTP(b, conns, static, enc.accept)
			})
			b.Run(fmt.Sprintf("ebb-http-%s/conns-%d", enc.name, conns), func(b *testing.B) {
				runHTTP(b, conns, url, enc.accept)
			})
		}
		b.Run(fmt.Sprintf("redis-zrevrange/conns-%d", conns), func(b *testing.B) {
			if rdb == nil {
				b.Skip("redis-server is not on PATH (apt-get install -y redis-server)")
			}
			client := redis.NewClient(&redis.Options{Addr: rdb.addr, PoolSize: conns, MinIdleConns: conns})
			defer client.Close()
			ctx := context.Background()
			read := func() error {
				got, err := client.ZRevRange(ctx, "list", 0, listGet-1).Result()
				if err == nil && len(got) != listGet {
					err = fmt.Errorf("%d members", len(got))
				}
				return err
			}
			run(b, conns, read)
		})
	}
}

// runHTTP reads url over HTTP from conns connections, asking for accept
// when it is not empty, and drains each body.
func runHTTP(b *testing.B, conns int, url, accept string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	defer client.CloseIdleConnections()
	run(b, conns, func() error {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			return err
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil && (resp.StatusCode != http.StatusOK || n < 20*listGet) {
			err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
		}
		return err
	})
}

// startStatic serves, with nothing but net/http, the very bodies ebb
// answers url with (JSON, or MessagePack for an Accept naming it), from
// memory: the ceiling of an HTTP server in Go on this machine, beside
// which ebb's own cost shows.
func startStatic(b *testing.B, url string) string {
	b.Helper()
	bodies := map[bool][]byte{}
	for _, msgpack := range []bool{false, true} {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			b.Fatal(err)
		}
		if msgpack {
			req.Header.Set("Accept", "application/msgpack")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		bodies[msgpack], err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d, %v", resp.StatusCode, err)
		}
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msgpack := r.Header.Get("Accept") == "application/msgpack"
		ct := "application/json"
		if msgpack {
			ct = "application/msgpack"
		}
		h := w.Header()
		h.Set("Content-Type", ct)
		h.Set("Content-Length", strconv.Itoa(len(bodies[msgpack])))
		_, _ = w.Write(bodies[msgpack])
	}))
	b.Cleanup(ts.Close)
	return ts.URL
}

// run calls read b.N times from one goroutine (conns 1) or from conns
// goroutines, and reports items/s.
func run(b *testing.B, conns int, read func() error) {
	if err := read(); err != nil { // warm the connection
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if conns == 1 {
		for b.Loop() {
			if err := read(); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism(max(1, conns/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := read(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.ReportMetric(float64(b.N*listGet)/b.Elapsed().Seconds(), "items/s")
}

// startEbb opens ebb as `ebb serve` does, fills the list and serves the
// HTTP API on loopback; it returns the URL of the list read.
func startEbb(b testing.TB) string {
	b.Helper()
	ctx := context.Background()
	db, err := ebb.Open(ctx, ebb.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	srv, err := server.New(server.Options{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	id := lists.FeatureID{EntityType: "user", Feature: "stories"}
	if _, _, err := db.Lists().CreateFeature(ctx, id, 30*24*time.Hour); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	items := make([]lists.Item, listItems)
	for i := range items {
		items[i] = lists.Item{Value: []byte(value(i)), Timestamp: now.Add(-time.Duration(i) * time.Second)}
	}
	if _, err := db.Lists().Add(ctx, id, entity, items); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	return ts.URL + "/v1/lists/user/stories/_/" + entity + "/items?limit=" + strconv.Itoa(listGet)
}

type redisServer struct{ addr string }

// startRedis starts a private redis-server without persistence (nothing
// is written during the reads) and fills the sorted set; nil when
// redis-server is not installed.
func startRedis(b *testing.B) *redisServer {
	b.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", b.TempDir())
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	ctx := context.Background()
	for i := 0; ; i++ {
		if err := client.Ping(ctx).Err(); err == nil {
			break
		} else if i == 100 {
			b.Fatalf("redis-server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	now := time.Now().Unix()
	members := make([]redis.Z, listItems)
	for i := range members {
		members[i] = redis.Z{Score: float64(now - int64(i)), Member: value(i)}
	}
	if err := client.ZAdd(ctx, "list", members...).Err(); err != nil {
		b.Fatal(err)
	}
	if n := client.ZCard(ctx, "list").Val(); n != listItems {
		b.Fatalf("sorted set holds %d members", n)
	}
	return &redisServer{addr: addr}
}

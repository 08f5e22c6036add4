package server_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// scanClock records the partitions a read visits: how many, and when the
// last one was done.
type scanClock struct {
	store.Store
	scans atomic.Int64
	last  atomic.Int64 // Unix ns at the end of the last Scan
}

func (c *scanClock) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	c.scans.Add(1)
	defer func() { c.last.Store(time.Now().UnixNano()) }()
	return c.Store.Scan(ctx, table, q, fn)
}

// TestHangUpStopsARead reads an index of 1 ms partitions over its whole
// window (480,000 partitions, with the read budget raised past them so
// that one read walks them all, as every read did before there was a
// budget), and hangs up once the read is under way: the read must stop
// within a few partitions' time, long before its end, and be counted as
// 499. It runs on the listener EBB_TEST_LISTENER selects; both must
// notice a hang-up.
func TestHangUpStopsARead(t *testing.T) {
	reg := prometheus.NewRegistry()
	cs := &scanClock{Store: testbackend.Pebble(t, nil)}
	svc, err := timeseries.New(t.Context(), cs, timeseries.Options{Registerer: reg, MaxPartitions: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	cfg := timeseries.Config{Name: "ev", TableBucket: time.Minute, PartitionBucket: time.Millisecond, Retention: 5 * time.Minute, Runway: 2}
	if _, _, err := svc.Create(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Registerer: reg, Features: []server.Feature{server.Indexes(svc)}})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/indexes/ev/events?index_id=acc&limit=100", nil)
	answered := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	// Hang up once the read has visited 20,000 partitions (a few
	// percent of them).
	for cs.scans.Load() < 20000 {
		select {
		case status := <-answered:
			t.Fatalf("the read of 480,000 partitions was answered (%d) before the test could hang up", status)
		case <-time.After(time.Millisecond):
		}
	}
	hungUp := time.Now()
	cancel()
	atHangUp := cs.scans.Load()
	if status := <-answered; status != 0 {
		t.Fatalf("the client got status %d after hanging up", status)
	}
	// The read has stopped once no partition has been read for 200 ms.
	for n := cs.scans.Load(); ; {
		time.Sleep(200 * time.Millisecond)
		m := cs.scans.Load()
		if m == n {
			break
		}
		n = m
		if time.Since(hungUp) > 30*time.Second {
			t.Fatalf("the read goes on 30 s after the hang-up: %d partitions", m)
		}
	}
	stopped := time.Unix(0, cs.last.Load())
	total := cs.scans.Load()
	listener := os.Getenv("EBB_TEST_LISTENER")
	if listener == "" {
		listener = "main"
	}
	t.Logf("%s listener: hang-up after %d partitions; the read stopped %s later, after %d more partitions (%d of 480,000)",
		listener, atHangUp, stopped.Sub(hungUp).Round(10*time.Microsecond), total-atHangUp, total)
	if total >= 479999 {
		t.Fatalf("the read ran to its end (%d partitions) although its client hung up", total)
	}
	if d := stopped.Sub(hungUp); d > 500*time.Millisecond {
		t.Fatalf("the read stopped %s after the hang-up, want within 500 ms", d)
	}
	const counted = `ebb_http_requests_total{code="499",route="GET /v1/indexes/{name}/events"} 1`
	deadline := time.Now().Add(5 * time.Second)
	for {
		body := string(call(t, "GET", ts.URL+"/metrics", "", nil).body)
		if strings.Contains(body, counted) {
			break
		}
		if time.Now().After(deadline) {
			var lines []string
			for l := range strings.Lines(body) {
				if strings.HasPrefix(l, "ebb_http_requests_total") {
					lines = append(lines, strings.TrimSpace(l))
				}
			}
			t.Fatalf("no 499 counted for the hang-up; requests counted:\n%s", strings.Join(lines, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

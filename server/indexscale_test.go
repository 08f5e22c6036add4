package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// listRun is what one GET /v1/indexes over many indexes cost.
type listRun struct {
	calls map[string]int
	took  time.Duration
	bytes int
	// plans and planCalls are what the dashboard's next step cost: a dry
	// run of every index, one request each.
	plans     time.Duration
	planCalls map[string]int
}

// listIndexesAt serves n indexes of hourly shards (about shards each) and
// answers GET /v1/indexes once, counting the store calls it makes.
func listIndexesAt(tb testing.TB, n, shards int) listRun {
	tb.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 30, 0, 0, time.UTC))
	cs := storetest.NewCalls(testbackend.Pebble(tb, clock.Now))
	svc, err := timeseries.New(ctx, cs, timeseries.Options{Now: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		cfg := timeseries.Config{Name: fmt.Sprintf("ix%04d", i), TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: time.Duration(shards-3) * time.Hour, Runway: 1}
		if _, _, err := svc.Create(ctx, cfg); err != nil {
			tb.Fatal(err)
		}
	}
	s, err := server.New(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Features: []server.Feature{server.Indexes(svc)}})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	cs.Reset()
	begin := time.Now()
	resp, err := http.Get(ts.URL + "/v1/indexes")
	if err != nil {
		tb.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	took := time.Since(begin)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /v1/indexes: %d %v: %.200s", resp.StatusCode, err, body)
	}
	r := listRun{calls: cs.Reset(), took: took, bytes: len(body)}
	// The dashboard then asks each index for its plan (a dry run).
	begin = time.Now()
	for i := range n {
		resp, err := http.Post(fmt.Sprintf("%s/v1/indexes/ix%04d/reconcile?dry_run=true", ts.URL, i), "application/json", nil)
		if err != nil {
			tb.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			tb.Fatalf("dry run of ix%04d: %d", i, resp.StatusCode)
		}
	}
	r.plans = time.Since(begin)
	r.planCalls = cs.Reset()
	return r
}

// TestListIndexesCallsDoNotGrowWithIndexes: GET /v1/indexes (which the
// dashboard reads) makes the same store calls over 40 indexes as over 4:
// one listing of the configs and one of the tables.
func TestListIndexesCallsDoNotGrowWithIndexes(t *testing.T) {
	small, large := listIndexesAt(t, 4, 10), listIndexesAt(t, 40, 10)
	if fmt.Sprint(small.calls) != fmt.Sprint(large.calls) || large.calls["Tables"] != 1 {
		t.Errorf("calls %v over 4 indexes, %v over 40; want the same, with one listing of the tables", small.calls, large.calls)
	}
}

// BenchmarkListIndexes answers GET /v1/indexes over many indexes, for
// docs/performance.md ("How the control plane grows"); run it with
// -benchtime=1x.
func BenchmarkListIndexes(b *testing.B) {
	for _, c := range []struct{ indexes, shards int }{{100, 10}, {2000, 10}, {2000, 50}} {
		b.Run(fmt.Sprintf("indexes=%d/shards=%d", c.indexes, c.shards), func(b *testing.B) {
			for range b.N {
				r := listIndexesAt(b, c.indexes, c.shards)
				b.ReportMetric(float64(r.took.Microseconds())/1e3, "answer-ms")
				b.ReportMetric(float64(r.bytes)/(1<<20), "body-MiB")
				calls := 0
				for _, n := range r.calls {
					calls += n
				}
				b.ReportMetric(float64(calls), "calls")
				b.ReportMetric(r.plans.Seconds(), "dry-runs-s")
				calls = 0
				for _, n := range r.planCalls {
					calls += n
				}
				b.ReportMetric(float64(calls), "dry-run-calls")
			}
		})
	}
}

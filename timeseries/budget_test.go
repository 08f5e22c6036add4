package timeseries

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// scanCounter counts the partitions read (Scan calls) and, when onScan is
// set, calls it with the count before each one.
type scanCounter struct {
	store.Store
	scans  atomic.Int64
	onScan func(n int64)
}

func (c *scanCounter) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	n := c.scans.Add(1)
	if c.onScan != nil {
		c.onScan(n)
	}
	return c.Store.Scan(ctx, table, q, fn)
}

// milli is the index of the issue: partitions of one millisecond, shards
// of a minute, five minutes of retention: 300,000 partitions in the
// retention window.
var milli = Config{Name: "ev", TableBucket: time.Minute, PartitionBucket: time.Millisecond, Retention: 5 * time.Minute, Runway: 2}

// milliEvents writes a sparse index_id "acc" into milli: events on
// partition and shard edges, several at one millisecond, the first and
// last live millisecond, and an index_id beside it that no query of "acc"
// may return. now is a shard start.
func milliEvents(t *testing.T, svc *Service, now time.Time) []Event {
	t.Helper()
	first := now.Add(-milli.Retention).Add(time.Millisecond) // the oldest live ms
	var all []Event
	add := func(ts time.Time, eid string) {
		all = append(all, ev("acc", eid, ts, "p "+eid))
	}
	add(first, "first")
	add(now.Add(-4*time.Minute), "shard_edge")
	add(now.Add(-4*time.Minute-time.Millisecond), "before_edge")
	for i := range 5 {
		add(now.Add(-2*time.Minute+7*time.Millisecond), fmt.Sprintf("same_%d", i))
	}
	for s := 1; s < 290; s += 37 {
		add(now.Add(-time.Duration(s)*time.Second-123*time.Millisecond), fmt.Sprintf("s%03d", s))
	}
	add(now.Add(-time.Millisecond), "last_past")
	add(now.Add(90*time.Second), "future")
	other := []Event{ev("other", "x", now.Add(-time.Minute), "x"), ev("other", "y", first, "y")}
	if _, err := svc.Put(context.Background(), "ev", append(slices.Clone(all), other...)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b Event) int {
		return cmp.Or(a.Timestamp.Compare(b.Timestamp), cmp.Compare(a.EventID, b.EventID))
	})
	return all
}

// TestQueryVisitsAtMostTheBudget reads an index of 1 ms partitions over
// its whole window (300,000 partitions of retention and 180,000 of the hot
// shard and runway): one Query visits at most DefaultMaxPartitions of them
// and answers with what it found and a page token, and paging on, in
// either order and with any limit, returns every event exactly once, in
// order, each page within the budget. The router is the same on every
// backend; the embedded one alone pages through 480,000 partitions in
// seconds.
func TestQueryVisitsAtMostTheBudget(t *testing.T) {
	{
		ctx := context.Background()
		now := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
		clk := storetest.NewClock(now)
		cs := &scanCounter{Store: testbackend.Pebble(t, clk.Now)}
		svc, _ := newService(t, cs, clk.Now)
		mustCreate(t, svc, milli)
		all := milliEvents(t, svc, now)

		cs.scans.Store(0)
		began := time.Now()
		page, err := svc.Query(ctx, "ev", Query{IndexID: "acc", Limit: 100})
		took := time.Since(began)
		if err != nil {
			t.Fatal(err)
		}
		visited := cs.scans.Load()
		t.Logf("one query over 480,000 partitions of 1 ms: visited %d partitions in %s, %d events, token %v",
			visited, took, len(page.Events), page.NextPageToken != nil)
		if visited > DefaultMaxPartitions {
			t.Fatalf("one query visited %d partitions, budget %d", visited, DefaultMaxPartitions)
		}
		if page.NextPageToken == nil {
			t.Fatalf("a query that stopped at its budget with %d events gave no page token", len(page.Events))
		}

		want := func(from, to time.Time, desc bool) []Event {
			var out []Event
			for _, e := range all {
				if (from.IsZero() || !e.Timestamp.Before(from)) && (to.IsZero() || e.Timestamp.Before(to)) {
					out = append(out, e)
				}
			}
			if desc {
				slices.Reverse(out)
			}
			return out
		}
		// pageAll reads q page by page, checking each page against the
		// budget, and returns the events and the pages read.
		pageAll := func(q Query) ([]Event, int) {
			var out []Event
			for pages := 1; ; pages++ {
				cs.scans.Store(0)
				p, err := svc.Query(ctx, "ev", q)
				if err != nil {
					t.Fatal(err)
				}
				if n := cs.scans.Load(); n > DefaultMaxPartitions {
					t.Fatalf("page %d visited %d partitions, budget %d", pages, n, DefaultMaxPartitions)
				}
				if len(p.Events) > q.Limit {
					t.Fatalf("page of %d events, limit %d", len(p.Events), q.Limit)
				}
				out = append(out, p.Events...)
				if p.NextPageToken == nil {
					return out, pages
				}
				q.PageToken = p.NextPageToken
			}
		}
		// The whole window once; then a window of 3 s around the shard
		// edge and the events on it, both ways, with several limits.
		got, pages := pageAll(Query{IndexID: "acc", Limit: 100})
		if !sameEvents(got, want(time.Time{}, time.Time{}, false)) {
			t.Fatalf("paging the whole window: %d events, want %d:\n%v", len(got), len(all), got)
		}
		t.Logf("paging the whole window: %d pages", pages)
		from, to := now.Add(-4*time.Minute-1500*time.Millisecond), now.Add(-4*time.Minute+1500*time.Millisecond)
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{1, 2, 100} {
				got, _ := pageAll(Query{IndexID: "acc", From: from, To: to, Desc: desc, Limit: limit})
				if exp := want(from, to, desc); len(exp) != 2 || !sameEvents(got, exp) {
					t.Fatalf("desc=%v limit=%d: got %v, want %v", desc, limit, got, exp)
				}
			}
		}
		for _, limit := range []int{1, 3} {
			got, _ := pageAll(Query{IndexID: "acc", From: now.Add(-2*time.Minute - time.Second), To: now.Add(-2*time.Minute + time.Second), Desc: true, Limit: limit})
			if len(got) != 5 || got[0].EventID != "same_4" || got[4].EventID != "same_0" {
				t.Fatalf("limit %d: five events at one millisecond, newest first: got %v", limit, got)
			}
		}
	}
}

// TestQueryStopsWhenCancelled checks that a query looks at its context
// between partitions: cancelled before it starts it reads nothing, and
// cancelled during the read it stops at the next partition. (Each
// backend's own scan stopping is the backend's test.)
func TestQueryStopsWhenCancelled(t *testing.T) {
	{
		now := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
		clk := storetest.NewClock(now)
		cs := &scanCounter{Store: testbackend.Pebble(t, clk.Now)}
		svc, _ := newService(t, cs, clk.Now)
		mustCreate(t, svc, milli)
		milliEvents(t, svc, now)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		cs.scans.Store(0)
		if _, err := svc.Query(ctx, "ev", Query{IndexID: "acc", Limit: 100}); !errors.Is(err, context.Canceled) {
			t.Fatalf("query with a cancelled context: err %v, want context.Canceled", err)
		}
		if n := cs.scans.Load(); n != 0 {
			t.Fatalf("query with a cancelled context read %d partitions", n)
		}

		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		cs.onScan = func(n int64) {
			if n == 10 {
				cancel()
			}
		}
		cs.scans.Store(0)
		if _, err := svc.Query(ctx, "ev", Query{IndexID: "acc", Limit: 100}); !errors.Is(err, context.Canceled) {
			t.Fatalf("query cancelled at its 10th partition: err %v, want context.Canceled", err)
		}
		if n := cs.scans.Load(); n != 10 {
			t.Fatalf("query cancelled at its 10th partition read %d", n)
		}
	}
}

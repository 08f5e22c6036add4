package timeseries

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// countingStore records the partitions queried or scanned, in order.
type countingStore struct {
	store.Store
	mu      sync.Mutex
	queried []string
}

func (c *countingStore) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	c.mu.Lock()
	c.queried = append(c.queried, fmt.Sprintf("%s/%v", table, q.Partition[1]))
	c.mu.Unlock()
	return c.Store.Scan(ctx, table, q, fn)
}

func (c *countingStore) reset() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.queried
	c.queried = nil
	return out
}

// TestLimitQueryTouchesOnlyNeededPartitions: a limit-10 query over six
// weeks of a busy index_id (weekly shards, daily partitions: 42 of them)
// reads the one partition at the near end of the range, in either order;
// for a sparse index_id it reads partitions in order until it has 10 rows
// and not one more.
func TestLimitQueryTouchesOnlyNeededPartitions(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		now := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC) // a shard boundary (Thursday)
		clk := storetest.NewClock(now)
		cs := &countingStore{Store: open(t, clk.Now)}
		svc, _ := newService(t, cs, clk.Now)
		cfg := Config{Name: "ev", TableBucket: 7 * 24 * time.Hour, PartitionBucket: 24 * time.Hour, Retention: 6 * 7 * 24 * time.Hour, Runway: 2}
		mustCreate(t, svc, cfg)

		// "busy": 24 events a day for six weeks; "sparse": one event on each of
		// the days 3, 9, 15, ... (counted from the start of the range).
		from := now.Add(-cfg.Retention).Add(time.Hour)
		var batch []Event
		for d := range 42 {
			day := from.Add(time.Duration(d) * 24 * time.Hour)
			for h := range 24 {
				batch = append(batch, ev("busy", fmt.Sprintf("d%02dh%02d", d, h), day.Add(time.Duration(h)*time.Minute), ""))
			}
			if d%6 == 3 {
				batch = append(batch, ev("sparse", fmt.Sprintf("d%02d", d), day, ""))
			}
		}
		if _, err := svc.Put(ctx, "ev", batch); err != nil {
			t.Fatal(err)
		}
		to := now
		partitionOf := func(ts time.Time) string {
			ms := ts.UnixMilli()
			return fmt.Sprintf("%s/%d", cfg.shardTable(cfg.shardOf(ms)), cfg.bucketOf(ms))
		}
		cs.reset()

		for _, c := range []struct {
			id   string
			desc bool
			want []string // partitions expected to be read, in order
		}{
			{"busy", false, []string{partitionOf(from)}},
			{"busy", true, []string{partitionOf(to.Add(-time.Millisecond))}},
			{"sparse", false, nil}, // computed below
		} {
			if c.id == "sparse" {
				// Every daily partition up to the 10th event's day, the one on
				// day 3 + 6*9 = 57 being beyond six weeks: all 42 partitions.
				for d := range 42 {
					c.want = append(c.want, partitionOf(from.Add(time.Duration(d)*24*time.Hour)))
				}
			}
			page, err := svc.Query(ctx, "ev", Query{IndexID: c.id, From: from, To: to, Desc: c.desc, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			got := cs.reset()
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s desc=%v: read partitions %v, want %v", c.id, c.desc, got, c.want)
			}
			wantEvents := 10
			if c.id == "sparse" {
				wantEvents = 7 // days 3, 9, ..., 39
			}
			if len(page.Events) != wantEvents {
				t.Errorf("%s desc=%v: %d events, want %d", c.id, c.desc, len(page.Events), wantEvents)
			}
		}

		// Resuming reads on from where the page ended: the second page of 20
		// busy events is the rest of day 0 (4 events) and 16 of day 1.
		page, err := svc.Query(ctx, "ev", Query{IndexID: "busy", From: from, To: to, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		cs.reset()
		page, err = svc.Query(ctx, "ev", Query{IndexID: "busy", From: from, To: to, Limit: 20, PageToken: page.NextPageToken})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{partitionOf(from), partitionOf(from.Add(24 * time.Hour))}
		if got := cs.reset(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("second page read %v, want %v", got, want)
		}
		if len(page.Events) != 20 || page.Events[0].EventID != "d00h20" || page.Events[19].EventID != "d01h15" {
			t.Errorf("second page: %d events from %s to %s", len(page.Events), page.Events[0].EventID, page.Events[len(page.Events)-1].EventID)
		}
	})
}

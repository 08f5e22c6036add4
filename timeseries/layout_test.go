package timeseries

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// sortEvents orders events as an ascending query returns them.
func sortEvents(es []Event) []Event {
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b Event) int {
		if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
			return c
		}
		return cmp.Compare(a.EventID, b.EventID)
	})
	return out
}

// eventsBetween returns n events of id spread over [from, to).
func eventsBetween(id, tag string, from, to time.Time, n int) []Event {
	var out []Event
	step := to.Sub(from) / time.Duration(n)
	for i := range n {
		ts := from.Add(time.Duration(i) * step).Truncate(time.Millisecond)
		out = append(out, ev(id, fmt.Sprintf("%s%03d", tag, i), ts, tag))
	}
	return out
}

func layoutChangeOf(t *testing.T, plan shardmgr.Plan) shardmgr.Transition {
	t.Helper()
	if len(plan.Transitions) != 1 {
		t.Fatalf("plan transitions %+v, want one", plan.Transitions)
	}
	return plan.Transitions[0]
}

// TestLayoutChange changes an index's table and partition buckets in
// place: the change takes effect at the first boundary common to both
// table buckets past the runway, writes before and after it land in the
// shards of their layout, reads and page tokens cross it, a second change
// before it took effect replaces it, the config survives a restart, and
// the old layout's shards leave by retention.
func TestLayoutChange(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0) // 12:00
		st := open(t, clk.Now)
		svc, _ := newService(t, st, clk.Now)
		mustCreate(t, svc, brief) // 1h shards, 10m partitions, 6h retention, runway 2

		// Events of the old layout, and a page token taken before the
		// change.
		before := eventsBetween("acc", "a", t0.Add(-3*time.Hour), t0.Add(3*time.Hour), 60)
		if _, err := svc.WriteEvents(ctx, "ev", before); err != nil {
			t.Fatal(err)
		}
		early, err := svc.QueryEvents(ctx, "ev", Query{IndexID: "acc", Limit: 5})
		if err != nil || len(early.Events) != 5 || early.NextPageToken == nil {
			t.Fatalf("first page: %d events, %v", len(early.Events), err)
		}

		// The change: the runway ends at 15:00, the first boundary common
		// to 1h and 2h after it is 16:00.
		wide := brief
		wide.TableBucket, wide.PartitionBucket = 2*time.Hour, 30*time.Minute
		boundary := t0.Add(4 * time.Hour)
		idx, created, err := svc.Create(ctx, wide)
		if err != nil || created {
			t.Fatalf("layout change: created %v, %v", created, err)
		}
		want := []Layout{
			{From: time.Unix(0, 0).UTC(), TableBucket: time.Hour, PartitionBucket: 10 * time.Minute},
			{From: boundary, TableBucket: 2 * time.Hour, PartitionBucket: 30 * time.Minute},
		}
		if !sameLayouts(idx.Layouts, want) || idx.TableBucket != 2*time.Hour || len(idx.Shards) != 9 {
			t.Fatalf("after the change: %+v, %d shards; want layouts %+v and the 9 shards of before", idx.Layouts, len(idx.Shards), want)
		}
		if again, _, err := svc.Create(ctx, wide); err != nil || !sameLayouts(again.Layouts, want) {
			t.Fatalf("the same change again: %+v, %v", again.Layouts, err)
		}
		plan, _, err := svc.Reconcile(ctx, "ev", shardmgr.RunOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if tr := layoutChangeOf(t, plan); !tr.From.Equal(boundary) || tr.Created || tr.Change != "layout change: table_bucket 1h -> 2h, partition_bucket 10m -> 30m" {
			t.Fatalf("transition %+v", tr)
		}
		if s := plan.String(); !strings.Contains(s, "layout change: table_bucket 1h -> 2h") {
			t.Fatalf("plan text does not show the transition:\n%s", s)
		}
		// Past the runway, as before the change.
		if _, err := svc.WriteEvents(ctx, "ev", []Event{ev("acc", "x", boundary, "")}); !errors.Is(err, ErrNoShard) {
			t.Fatalf("write at the boundary before its shard exists: %v, want ErrNoShard", err)
		}

		// A second change before the first took effect replaces it; a
		// change back cancels it.
		narrow := wide
		narrow.PartitionBucket = 20 * time.Minute
		if idx, _, err = svc.Create(ctx, narrow); err != nil || len(idx.Layouts) != 2 || idx.Layouts[1].PartitionBucket != 20*time.Minute || !idx.Layouts[1].From.Equal(boundary) {
			t.Fatalf("second change: %+v, %v", idx.Layouts, err)
		}
		if idx, _, err = svc.Create(ctx, brief); err != nil || idx.Layouts != nil {
			t.Fatalf("change back: %+v, %v", idx.Layouts, err)
		}
		if idx, _, err = svc.Create(ctx, wide); err != nil || !sameLayouts(idx.Layouts, want) {
			t.Fatalf("change again: %+v, %v", idx.Layouts, err)
		}

		// At 14:00 the runway reaches the boundary: the plan creates the
		// new layout's first shard, saying so.
		clk.Set(t0.Add(2*time.Hour + 30*time.Second))
		plan, _, err = svc.Reconcile(ctx, "ev", shardmgr.RunOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		first := shardmgr.ShardName("ev", boundary)
		var reason string
		for _, a := range plan.Actions {
			if a.Op == shardmgr.OpCreate && a.Table == first {
				reason = a.Reason
				if !a.End.Equal(boundary.Add(2 * time.Hour)) {
					t.Errorf("first shard of the new layout ends %s, want 2h after the boundary", a.End)
				}
			}
		}
		if !strings.Contains(reason, "first shard of the new layout (layout change: table_bucket 1h -> 2h, partition_bucket 10m -> 30m") {
			t.Fatalf("create of %s: reason %q; plan:\n%s", first, reason, plan)
		}
		if err := svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		idx, err = svc.Get(ctx, "ev")
		if err != nil {
			t.Fatal(err)
		}
		last := idx.Shards[len(idx.Shards)-1]
		if last.Table != first || !last.End.Equal(boundary.Add(2*time.Hour)) {
			t.Fatalf("last shard %+v, want %s of 2h", last, first)
		}

		// Once its shard exists the change has taken effect: a further
		// change is an epoch after it, and changing back replaces that.
		if idx, _, err = svc.Create(ctx, brief); err != nil || len(idx.Layouts) != 3 || !idx.Layouts[2].From.Equal(boundary.Add(2*time.Hour)) {
			t.Fatalf("change after the first took effect: %+v, %v", idx.Layouts, err)
		}
		if idx, _, err = svc.Create(ctx, wide); err != nil || !sameLayouts(idx.Layouts, want) {
			t.Fatalf("change back: %+v, %v", idx.Layouts, err)
		}

		// Writes across the boundary, in one batch.
		after := eventsBetween("acc", "b", t0.Add(2*time.Hour), boundary.Add(2*time.Hour), 50)
		if n, err := svc.WriteEvents(ctx, "ev", after); err != nil || n != len(after) {
			t.Fatalf("write across the boundary: %d, %v", n, err)
		}
		// The new layout's partitions are 30 minutes wide in a 2h shard.
		rows := 0
		for _, b := range []int64{0, 1, 2, 3} {
			bucket := boundary.UnixMilli()/(30*time.Minute).Milliseconds() + b
			res, err := storeRows(ctx, st, first, "acc", bucket)
			if err != nil {
				t.Fatal(err)
			}
			rows += res
		}
		if rows != 25 {
			t.Fatalf("%d rows in the 30-minute partitions of %s, want 25", rows, first)
		}

		all := sortEvents(append(slices.Clone(before), after...))
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{1, 7, 1000} {
				got := queryAll(t, svc, Query{IndexID: "acc", Limit: limit, Desc: desc})
				wantEvents := all
				if desc {
					wantEvents = slices.Clone(all)
					slices.Reverse(wantEvents)
				}
				if !sameEvents(got, wantEvents) {
					t.Fatalf("desc=%v limit=%d: %d events, want %d in order", desc, limit, len(got), len(wantEvents))
				}
			}
		}
		// A range across the boundary, both ways, and the token taken
		// before the change.
		got := queryAll(t, svc, Query{IndexID: "acc", From: boundary.Add(-90 * time.Minute), To: boundary.Add(time.Hour), Limit: 3})
		var span []Event
		for _, e := range all {
			if !e.Timestamp.Before(boundary.Add(-90*time.Minute)) && e.Timestamp.Before(boundary.Add(time.Hour)) {
				span = append(span, e)
			}
		}
		if len(span) == 0 || !sameEvents(got, span) {
			t.Fatalf("range across the boundary: %d events, want %d", len(got), len(span))
		}
		rest := queryAll(t, svc, Query{IndexID: "acc", Limit: 4, PageToken: early.NextPageToken})
		if !sameEvents(rest, all[5:]) {
			t.Fatalf("token from before the change: %d events, want %d", len(rest), len(all)-5)
		}

		// An erase across the boundary finds the events of both layouts,
		// by the range and one by one.
		other := eventsBetween("other", "c", t0.Add(2*time.Hour), boundary.Add(2*time.Hour), 16) // one each 15 min
		if _, err := svc.WriteEvents(ctx, "ev", other); err != nil {
			t.Fatal(err)
		}
		res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "other", From: boundary.Add(-time.Hour), To: boundary.Add(time.Hour)})
		if err != nil || res.Removed != 8 || res.Shards != 2 {
			t.Fatalf("erase across the boundary: %+v, %v; want 8 events from 2 shards", res, err)
		}
		for _, e := range []Event{other[0], other[15]} {
			if res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "other", Timestamp: e.Timestamp, EventID: e.EventID}); err != nil || res.Removed != 1 {
				t.Fatalf("erase of %s at %s: %+v, %v", e.EventID, e.Timestamp, res, err)
			}
		}
		if left := queryAll(t, svc, Query{IndexID: "other", Limit: 100}); !sameEvents(left, append(slices.Clone(other[1:4]), other[12:15]...)) {
			t.Fatalf("after the erases: %d events of other, want 6", len(left))
		}

		// A restart reads the layouts back.
		svc2, _ := newService(t, st, clk.Now)
		idx, err = svc2.Get(ctx, "ev")
		if err != nil || !sameLayouts(idx.Layouts, want) {
			t.Fatalf("after a restart: %+v, %v", idx.Layouts, err)
		}
		if got := queryAll(t, svc2, Query{IndexID: "acc", Limit: 11}); !sameEvents(got, all) {
			t.Fatalf("after a restart: %d events, want %d", len(got), len(all))
		}

		// The old layout's shards leave by retention; then a change
		// forgets its epoch.
		// In steps, each inside the manager's clock-jump guard.
		for _, at := range []time.Duration{9 * time.Hour, 18 * time.Hour, 26*time.Hour + time.Second} {
			clk.Set(boundary.Add(at))
			for range 12 {
				if err := svc2.Manager().RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		idx, err = svc2.Get(ctx, "ev")
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range idx.Shards {
			if sh.Start.Before(boundary) || sh.End.Sub(sh.Start) != 2*time.Hour {
				t.Errorf("shard %s [%s, %s) left after the old layout expired", sh.Table, sh.Start, sh.End)
			}
		}
		if len(idx.Shards) != 3+1+2 { // the oldest partial, 6h of 2h, hot, runway
			t.Errorf("%d shards of the new layout, want 6", len(idx.Shards))
		}
		if got := queryAll(t, svc2, Query{IndexID: "acc", Limit: 9}); len(got) != 0 {
			t.Errorf("%d events past retention", len(got))
		}
		wider := wide
		wider.TableBucket = 4 * time.Hour
		idx, _, err = svc2.Create(ctx, wider)
		if err != nil || len(idx.Layouts) != 2 || idx.Layouts[0].TableBucket != 2*time.Hour || idx.Layouts[1].TableBucket != 4*time.Hour {
			t.Fatalf("a change once the first layout is gone: %+v, %v", idx.Layouts, err)
		}
	})
}

// storeRows counts the rows of one partition of a shard.
func storeRows(ctx context.Context, st store.Store, table, indexID string, bucket int64) (int, error) {
	n := 0
	_, err := st.Scan(ctx, table, store.Query{Partition: []any{indexID, bucket}, Limit: store.MaxLimit}, func(*store.RawRow) error {
		n++
		return nil
	})
	return n, err
}

func sameLayouts(a, b []Layout) bool {
	return slices.EqualFunc(a, b, func(x, y Layout) bool {
		return x.From.Equal(y.From) && x.TableBucket == y.TableBucket && x.PartitionBucket == y.PartitionBucket
	})
}

// TestLayoutChangeRefused: changes that cannot be made answer
// ErrLayoutChange or ErrInvalid, and change nothing.
func TestLayoutChangeRefused(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		for name, c := range map[string]struct {
			mut    func(*Config)
			layout bool
		}{
			"table buckets not dividing": {func(c *Config) { c.TableBucket = 90 * time.Minute }, true},
			"partition not dividing":     {func(c *Config) { c.TableBucket = 2 * time.Hour; c.PartitionBucket = 7 * time.Minute }, false},
			"sub-second table bucket":    {func(c *Config) { c.TableBucket = 1500 * time.Millisecond }, false},
			"too many shards":            {func(c *Config) { c.TableBucket = time.Second; c.PartitionBucket = time.Second }, false},
		} {
			cfg := brief
			c.mut(&cfg)
			_, _, err := svc.Create(ctx, cfg)
			if !errors.Is(err, store.ErrInvalid) || (c.layout && !errors.Is(err, ErrLayoutChange)) {
				t.Errorf("%s: %v, want ErrInvalid (ErrLayoutChange: %v)", name, err, c.layout)
			}
		}
		idx, err := svc.Get(ctx, "ev")
		if err != nil || idx.Layouts != nil || idx.TableBucket != time.Hour || idx.PartitionBucket != 10*time.Minute {
			t.Fatalf("after refused changes: %+v, %v", idx.Config, err)
		}
	})
}

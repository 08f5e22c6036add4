package lists_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestPhysicalExpiry shows that list items are removed from disk, not only
// hidden, when the Service runs on the expiry decorator: every item is
// written with its own expiry, which the decorator indexes for its sweeper.
func TestPhysicalExpiry(t *testing.T) {
	ctx := t.Context()
	c := storetest.NewClock(start)
	raw := testbackend.Pebble(t, c.Now)
	wrapped, err := expiry.Wrap(ctx, raw, expiry.Options{Now: c.Now, Window: time.Minute, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wrapped.Close() })
	svc, err := lists.New(ctx, wrapped, lists.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := svc.CreateFeature(ctx, feat, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var items []lists.Item
	for i := range 20 {
		// Half expire in 10 minutes, half in 50.
		age := 50 * time.Minute
		if i%2 == 0 {
			age = 10 * time.Minute
		}
		items = append(items, item(fmt.Sprint(i), start.Add(-age)))
	}
	if _, err := svc.Add(ctx, feat, "alice", items); err != nil {
		t.Fatal(err)
	}
	rows := func() int64 {
		t.Helper()
		st, err := raw.Stats(ctx, f.Table)
		if err != nil {
			t.Fatal(err)
		}
		return st.Rows
	}
	if n := rows(); n != 20 {
		t.Fatalf("%d rows on disk after the add, want 20", n)
	}
	c.Advance(15 * time.Minute)
	if _, err := wrapped.Sweeper().SweepOnce(ctx, c.Now()); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 10 {
		t.Fatalf("%d rows on disk after the first expiries were swept, want 10", n)
	}
	got, err := svc.Get(ctx, feat, "alice", time.Time{}, 100)
	if err != nil || len(got) != 10 {
		t.Fatalf("get: %d items, %v", len(got), err)
	}
	c.Advance(time.Hour)
	if _, err := wrapped.Sweeper().SweepOnce(ctx, c.Now()); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d rows on disk after every item expired and was swept, want 0", n)
	}
}

// TestDefaultTTLSafeguard shows that a write into a feature table that
// forgets its expiry (a backfill bypassing the Service) still expires, after
// the feature's TTL.
func TestDefaultTTLSafeguard(t *testing.T) {
	e := newEnv(t, testbackend.Pebble)
	f := mustCreate(t, e, feat, time.Hour)
	key := lists.ItemKey(start, []byte("backfilled"))
	err := e.st.Write(t.Context(), f.Table, []store.Mutation{{
		Partition: []any{"alice"}, Clustering: []any{key},
		Cells: []store.Cell{{Column: "value", Value: []byte("backfilled")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	row, err := e.st.Get(t.Context(), f.Table, []any{"alice"}, []any{key})
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(time.Hour).Truncate(time.Millisecond); !row.ExpiresAt.Equal(want) {
		t.Fatalf("row without expiry expires at %s, want %s", row.ExpiresAt, want)
	}
}

// writeCounter records the sizes of the Writes a Store receives.
type writeCounter struct {
	store.Store
	writes []int
}

func (w *writeCounter) Write(ctx context.Context, table string, batch []store.Mutation) error {
	w.writes = append(w.writes, len(batch))
	return w.Store.Write(ctx, table, batch)
}

// TestAddAtomicity checks how Add hands its items to the backend: in one
// Write when the backend applies a partition batch of any size atomically
// (Pebble), in atomic batches of the backend's maximum when that is
// smaller (DynamoDB transactions: 100), and in one Write, batched as the
// backend can, when it has no atomic batches at all (dynalite).
func TestAddAtomicity(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		c := storetest.NewClock(start)
		inner := open(t, c.Now)
		wc := &writeCounter{Store: inner}
		svc, err := lists.New(t.Context(), wc, lists.Options{Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.CreateFeature(t.Context(), feat, time.Hour); err != nil {
			t.Fatal(err)
		}
		wc.writes = nil
		items := make([]lists.Item, lists.MaxItemsPerAdd)
		for i := range items {
			items[i] = item(fmt.Sprint(i), start)
		}
		if _, err := svc.Add(t.Context(), feat, "alice", items); err != nil {
			t.Fatal(err)
		}
		caps := inner.Capabilities()
		if !caps.AtomicPartitionBatch {
			// Nothing to gain from splitting: the backend batches as it
			// can (dynalite has no transactions).
			if len(wc.writes) != 1 || wc.writes[0] != len(items) {
				t.Fatalf("writes %v on a backend without atomic batches, want one of %d", wc.writes, len(items))
			}
			return
		}
		total := 0
		for _, n := range wc.writes {
			if n > caps.MaxAtomicBatch {
				t.Fatalf("a Write of %d mutations, more than the atomic maximum %d", n, caps.MaxAtomicBatch)
			}
			total += n
		}
		want := (len(items) + caps.MaxAtomicBatch - 1) / caps.MaxAtomicBatch
		if total != len(items) || len(wc.writes) != want {
			t.Fatalf("writes %v, want %d writes of %d mutations in all", wc.writes, want, len(items))
		}
	})
}

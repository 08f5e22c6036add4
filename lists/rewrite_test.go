package lists_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/rewrite"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/storetest"
)

// testRewrite changes a feature's TTL with a rewrite of the items already
// added: a job that is stopped after its first batch, resumed by another
// Service on the same store (a restart), and gives every item its
// timestamp + the new TTL, deleting those whose new expiry has passed. On
// a backend that cannot list partitions the request is refused and
// changes nothing.
func testRewrite(t *testing.T, e *env) {
	ctx := t.Context()
	mustCreate(t, e, feat, time.Hour)
	entities := []string{"alice", "bob", "carol"}
	for _, ent := range entities {
		mustAdd(t, e, feat, ent, item("new", start), item("old", start.Add(-30*time.Minute)))
	}
	if _, ok := store.As[store.PartitionLister](e.st); !ok {
		checkRewriteRefused(t, e)
		return
	}
	svc, err := lists.New(ctx, e.st, lists.Options{Now: e.clock.Now, RewriteBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, created, err := svc.CreateFeatureWith(ctx, feat, lists.FeatureConfig{TTL: 20 * time.Minute, Rewrite: true})
	if err != nil || created || f.TTL != 20*time.Minute {
		t.Fatalf("change with rewrite: %+v %v %v", f, created, err)
	}
	j, ok, err := svc.Rewrite(ctx, feat)
	if err != nil || !ok || j.State != rewrite.StateRunning || j.TTL != 20*time.Minute || j.Scanned != 0 {
		t.Fatalf("job after the request: %+v %v %v", j, ok, err)
	}
	// Past the wait for other processes' caches.
	e.clock.Advance(lists.DefaultCacheTTL)

	// Stopped after its first batch: the lease is lost before the second.
	if err := svc.RunRewrites(ctx, rewrite.FenceAfter(1), nil); !errors.Is(err, rewrite.ErrFenceLost) {
		t.Fatalf("run stopped by its fence: %v", err)
	}
	j, _, _ = svc.Rewrite(ctx, feat)
	if j.State != rewrite.StateRunning || j.Cursor == nil || j.Scanned != 2 || j.Rewritten != 1 || j.Removed != 1 {
		t.Fatalf("job after one batch: %+v", j)
	}

	// Resumed by another service, as after a restart: the other lists only.
	other, err := lists.New(ctx, e.st, lists.Options{Now: e.clock.Now, RewriteBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	var saves []lists.RewriteJob
	if err := other.RunRewrites(ctx, nil, func(_ string, _, after lists.RewriteJob) { saves = append(saves, after) }); err != nil {
		t.Fatal(err)
	}
	j, _, _ = other.Rewrite(ctx, feat)
	if j.State != rewrite.StateDone || j.Scanned != 6 || j.Rewritten != 3 || j.Removed != 3 || j.Skipped != 0 || j.Finished.IsZero() {
		t.Fatalf("job at its end: %+v", j)
	}
	// Once per batch: a backend may end its listing with an empty page,
	// one batch more.
	if len(saves) < 2 || len(saves) > 3 || saves[0].Scanned != 4 || saves[len(saves)-1].State != rewrite.StateDone {
		t.Fatalf("progress saved %d times (%+v), want once per remaining list", len(saves), saves)
	}
	// No item lives longer than the TTL now: reads stop looking back further.
	if f, err := other.Feature(ctx, feat); err != nil || f.MaxTTL != 20*time.Minute {
		t.Fatalf("feature after its rewrite: %+v %v, want MaxTTL 20m", f, err)
	}
	// Nothing left to do: a run changes nothing.
	if err := other.RunRewrites(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}

	// The old item is gone from the disk, the new one lives 20 minutes.
	for _, ent := range entities {
		page, err := kit.Query(ctx, e.st, f.Table, store.Query{Partition: []any{ent}, Limit: 10})
		if err != nil || len(page.Rows) != 1 {
			t.Fatalf("%s: %d rows stored, want the new item only (%v)", ent, len(page.Rows), err)
		}
		if want := start.Add(20 * time.Minute).Truncate(time.Millisecond).Add(time.Millisecond); !page.Rows[0].ExpiresAt.Equal(want) {
			t.Fatalf("%s: expiry %s, want %s", ent, page.Rows[0].ExpiresAt, want)
		}
	}
	e.clock.Set(start.Add(20*time.Minute - time.Nanosecond))
	sameItems(t, mustGet(t, e, feat, "bob", time.Time{}, 10), []lists.Item{item("new", start)})
	e.clock.Set(start.Add(20 * time.Minute))
	sameItems(t, mustGet(t, e, feat, "bob", time.Time{}, 10), nil)

	// A TTL changed again before a job ends supersedes it.
	mustAdd(t, e, feat, "dave", item("x", e.clock.Now()))
	if _, _, err := svc.CreateFeatureWith(ctx, feat, lists.FeatureConfig{TTL: time.Hour, Rewrite: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.CreateFeature(ctx, feat, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(lists.DefaultCacheTTL)
	if err := svc.RunRewrites(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if j, _, _ := svc.Rewrite(ctx, feat); j.State != rewrite.StateSuperseded || j.Scanned != 0 {
		t.Fatalf("job after another change: %+v", j)
	}
	// Deleting the version forgets its job.
	if err := svc.DeleteFeatureVersion(ctx, feat); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, e, feat, time.Hour)
	if _, ok, err := svc.Rewrite(ctx, feat); ok || err != nil {
		t.Fatalf("a recreated version has its predecessor's job: %v %v", ok, err)
	}
}

// checkRewriteRefused asks for a rewrite of feat, which holds items under
// a TTL of an hour, on a store that cannot list partitions: the request is
// refused with ErrRewriteUnsupported and changes nothing.
func checkRewriteRefused(t *testing.T, e *env) {
	ctx := t.Context()
	_, _, err := e.svc.CreateFeatureWith(ctx, feat, lists.FeatureConfig{TTL: 20 * time.Minute, Rewrite: true})
	if !errors.Is(err, lists.ErrRewriteUnsupported) || !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("rewrite without a partition lister: %v, want ErrRewriteUnsupported", err)
	}
	if f, err := e.svc.Feature(ctx, feat); err != nil || f.TTL != time.Hour || f.MaxTTL != time.Hour {
		t.Fatalf("a refused rewrite changed the feature: %+v %v", f, err)
	}
	if _, ok, err := e.svc.Rewrite(ctx, feat); ok || err != nil {
		t.Fatalf("a refused rewrite left a job: %v %v", ok, err)
	}
}

// noLister is a store that cannot list a table's partitions: it hides
// every optional part of the store it embeds.
type noLister struct{ store.Store }

// TestRewriteRefusedWithoutLister runs the refusal on the embedded backend
// with its partition listing hidden, as on a backend without one.
func TestRewriteRefusedWithoutLister(t *testing.T) {
	c := storetest.NewClock(start)
	st := noLister{testbackend.Pebble(t, c.Now)}
	svc, err := lists.New(t.Context(), st, lists.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, svc: svc, clock: c}
	mustCreate(t, e, feat, time.Hour)
	mustAdd(t, e, feat, "alice", item("a", start))
	checkRewriteRefused(t, e)
	if got := mustGet(t, e, feat, "alice", time.Time{}, 10); len(got) != 1 {
		t.Fatalf("items after a refused rewrite: %s", show(got))
	}
}

package lists_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
)

func capped(n int) lists.FeatureConfig {
	return lists.FeatureConfig{TTL: 30 * day, MaxItems: &n}
}

func mustCount(t testing.TB, e *env, id lists.FeatureID, entity string) int {
	t.Helper()
	n, err := e.svc.Count(context.Background(), id, entity)
	if err != nil {
		t.Fatalf("count %q: %v", entity, err)
	}
	return n
}

// numbered returns items "<prefix>i" at t0 + i ms for i in [from, to).
func numbered(prefix string, t0 time.Time, from, to int) []lists.Item {
	var items []lists.Item
	for i := from; i < to; i++ {
		items = append(items, item(fmt.Sprintf("%s%d", prefix, i), t0.Add(time.Duration(i)*time.Millisecond)))
	}
	return items
}

// newestFirst returns items sorted as a list returns them.
func newestFirst(items []lists.Item) []lists.Item {
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b lists.Item) int { return b.Timestamp.Compare(a.Timestamp) })
	return out
}

// testMaxItems: an Add that takes a list to its cap keeps it all; one
// that passes it deletes the oldest beyond it, counting them, and drops
// its own items that are at once beyond it; the cap shows, changes, and
// a lowered cap applies at the next Add.
func testMaxItems(t *testing.T, e *env) {
	ctx := t.Context()
	f, created, err := e.svc.CreateFeatureWith(ctx, feat, capped(3))
	if err != nil || !created || f.MaxItems != 3 {
		t.Fatalf("create with max_items 3: %+v %v %v", f, created, err)
	}
	if got, err := e.svc.Feature(ctx, feat); err != nil || got.MaxItems != 3 {
		t.Fatalf("feature: %+v %v", got, err)
	}
	t0 := start.Add(-time.Hour)
	all := numbered("s", t0, 0, 10)

	// At the cap: nothing trimmed.
	if res := mustAdd(t, e, feat, "alice", all[0:3]...); res.Written != 3 || res.Trimmed != 0 {
		t.Fatalf("add up to the cap: %+v", res)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), newestFirst(all[0:3]))
	// One beyond: the oldest goes.
	if res := mustAdd(t, e, feat, "alice", all[3]); res.Written != 1 || res.Trimmed != 1 {
		t.Fatalf("add one beyond the cap: %+v", res)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), newestFirst(all[1:4]))
	// Far beyond, in one add larger than the cap: only the newest three
	// of the list and the add together remain.
	if res := mustAdd(t, e, feat, "alice", all[4:9]...); res.Written != 5 || res.Trimmed != 5 {
		t.Fatalf("add five beyond the cap: %+v", res)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), newestFirst(all[6:9]))
	// An item older than every item of a full list is never stored.
	if res := mustAdd(t, e, feat, "alice", item("old", t0.Add(-time.Minute))); res.Written != 1 || res.Trimmed != 1 {
		t.Fatalf("add of an item older than the list: %+v", res)
	}
	// Re-adding an item of the list replaces it, trimming nothing.
	if res := mustAdd(t, e, feat, "alice", all[8]); res.Trimmed != 0 {
		t.Fatalf("re-add: %+v", res)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), newestFirst(all[6:9]))
	if n := mustCount(t, e, feat, "alice"); n != 3 {
		t.Fatalf("count at the cap: %d", n)
	}
	// Other lists of the feature are capped on their own.
	mustAdd(t, e, feat, "bob", all[0])
	sameItems(t, mustGet(t, e, feat, "bob", time.Time{}, 100), all[0:1])

	// The cap changes in place (not a conflict); lowered, it applies at
	// the list's next add.
	two := 2
	f, created, err = e.svc.CreateFeatureWith(ctx, feat, lists.FeatureConfig{TTL: 30 * day, MaxItems: &two})
	if err != nil || created || f.MaxItems != 2 {
		t.Fatalf("lower the cap: %+v %v %v", f, created, err)
	}
	if res := mustAdd(t, e, feat, "alice", all[9]); res.Trimmed != 2 {
		t.Fatalf("add after lowering the cap: %+v", res)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), newestFirst(all[8:10]))
	// A create that says nothing of the cap keeps it; zero lifts it.
	if f, _, err := e.svc.CreateFeature(ctx, feat, 30*day); err != nil || f.MaxItems != 2 {
		t.Fatalf("create without max_items: %+v %v", f, err)
	}
	zero := 0
	if f, _, err := e.svc.CreateFeatureWith(ctx, feat, lists.FeatureConfig{TTL: 30 * day, MaxItems: &zero}); err != nil || f.MaxItems != 0 {
		t.Fatalf("lift the cap: %+v %v", f, err)
	}
	if res := mustAdd(t, e, feat, "alice", all[0:4]...); res.Trimmed != 0 {
		t.Fatalf("add without a cap: %+v", res)
	}
	if n := mustCount(t, e, feat, "alice"); n != 6 {
		t.Fatalf("count without a cap: %d", n)
	}
	// Out of range.
	for _, n := range []int{-1, lists.MaxMaxItems + 1} {
		if _, _, err := e.svc.CreateFeatureWith(ctx, feat, lists.FeatureConfig{TTL: 30 * day, MaxItems: &n}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("max_items %d: %v, want invalid", n, err)
		}
	}
}

// testMaxItemsExpired: expired items are not counted against the cap and
// not counted by Count.
func testMaxItemsExpired(t *testing.T, e *env) {
	ctx := t.Context()
	if _, _, err := e.svc.CreateFeatureWith(ctx, feat, lists.FeatureConfig{TTL: day, MaxItems: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	t0 := start.Add(-day + time.Minute) // expires a minute after start
	mustAdd(t, e, feat, "alice", item("a", t0), item("b", t0.Add(time.Second)))
	if n := mustCount(t, e, feat, "alice"); n != 2 {
		t.Fatalf("count before expiry: %d", n)
	}
	e.clock.Advance(time.Hour)
	if n := mustCount(t, e, feat, "alice"); n != 0 {
		t.Fatalf("count after expiry: %d", n)
	}
	now := e.clock.Now()
	if res := mustAdd(t, e, feat, "alice", item("c", now), item("d", now.Add(time.Millisecond))); res.Trimmed != 0 {
		t.Fatalf("add over expired items: %+v", res)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 10), []lists.Item{item("d", now.Add(time.Millisecond)), item("c", now)})
}

func ptr(n int) *int { return &n }

// testMaxItemsRace: adders racing on one capped list, through two
// Services as two processes would, leave it holding exactly its newest
// items within the cap once every add has returned.
func testMaxItemsRace(t *testing.T, e *env) {
	ctx := t.Context()
	const limit, perAdder, batch = 5, 60, 3
	if _, _, err := e.svc.CreateFeatureWith(ctx, feat, capped(limit)); err != nil {
		t.Fatal(err)
	}
	other, err := lists.New(ctx, e.st, lists.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t0 := start.Add(-time.Hour)
	var all []lists.Item
	var wg sync.WaitGroup
	errs := make([]error, 2)
	begin := make(chan struct{}) // both adders start at once
	for a, svc := range []*lists.Service{e.svc, other} {
		// The adders interleave timestamps: adder a holds the items
		// whose index is a modulo 2.
		var mine []lists.Item
		for i := range perAdder {
			mine = append(mine, item(fmt.Sprintf("a%d-%d", a, i), t0.Add(time.Duration(2*i+a)*time.Millisecond)))
		}
		all = append(all, mine...)
		wg.Go(func() {
			<-begin
			for i := 0; i < len(mine) && errs[a] == nil; i += batch {
				_, errs[a] = svc.Add(context.Background(), feat, "alice", mine[i:i+batch])
			}
		})
	}
	// Where no other process writes, adds to one list are serialized and
	// each is one batch: a reader never sees the list past its cap.
	var longest int
	done := make(chan struct{})
	var reader sync.WaitGroup
	if !e.st.Capabilities().SharedAcrossProcesses {
		reader.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if items, err := e.svc.Get(context.Background(), feat, "alice", time.Time{}, 100); err == nil {
					longest = max(longest, len(items))
				}
			}
		})
	}
	close(begin)
	wg.Wait()
	close(done)
	reader.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if longest > limit {
		t.Fatalf("a reader saw %d items during the race, past the cap of %d", longest, limit)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), newestFirst(all)[:limit])
	if n := mustCount(t, e, feat, "alice"); n != limit {
		t.Fatalf("count after the race: %d, want %d", n, limit)
	}
}

// testCount: a count per list, zero for a list never written, NotFound
// for an unknown feature.
func testCount(t *testing.T, e *env) {
	ctx := t.Context()
	mustCreate(t, e, feat, 30*day)
	if n := mustCount(t, e, feat, "nobody"); n != 0 {
		t.Fatalf("count of a list never written: %d", n)
	}
	t0 := start.Add(-time.Hour)
	mustAdd(t, e, feat, "alice", numbered("x", t0, 0, 25)...)
	mustAdd(t, e, feat, "bob", numbered("x", t0, 0, 2)...)
	if n := mustCount(t, e, feat, "alice"); n != 25 {
		t.Fatalf("count: %d, want 25", n)
	}
	if _, err := e.svc.RemoveByValue(ctx, feat, "alice", []byte("x3")); err != nil {
		t.Fatal(err)
	}
	if n := mustCount(t, e, feat, "alice"); n != 24 {
		t.Fatalf("count after a removal: %d, want 24", n)
	}
	if n := mustCount(t, e, feat, "bob"); n != 2 {
		t.Fatalf("count of another list: %d", n)
	}
	other := feat
	other.Feature = "nope"
	if _, err := e.svc.Count(ctx, other, "alice"); !errors.Is(err, lists.ErrFeatureNotFound) {
		t.Fatalf("count of an unknown feature: %v", err)
	}
	if _, err := e.svc.Count(ctx, feat, ""); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("count without an entity: %v", err)
	}
}

// testDeleteFeature: deleting a whole feature drops every version's
// table and record, leaves other features alone, and is idempotent.
func testDeleteFeature(t *testing.T, e *env) {
	ctx := t.Context()
	versions := []string{"", "v2", "v3"}
	var tables []string
	t0 := start.Add(-time.Hour)
	for _, v := range versions {
		id := feat
		id.Version = v
		f := mustCreate(t, e, id, 30*day)
		tables = append(tables, f.Table)
		mustAdd(t, e, id, "alice", item("x"+v, t0))
	}
	keep := feat
	keep.Feature = "kept"
	mustCreate(t, e, keep, 30*day)
	mustAdd(t, e, keep, "alice", item("k", t0))
	keepType := feat
	keepType.EntityType = "shop"
	mustCreate(t, e, keepType, 30*day)

	deleted, err := e.svc.DeleteFeature(ctx, feat.EntityType, feat.Feature)
	if err != nil || !slices.Equal(deleted, versions) {
		t.Fatalf("delete feature: %q %v, want %q", deleted, err, versions)
	}
	for i, v := range versions {
		if infos, err := e.st.Tables(ctx, tables[i]); err != nil || len(infos) != 0 {
			t.Fatalf("version %q: table %s after delete: %+v %v", v, tables[i], infos, err)
		}
		id := feat
		id.Version = v
		if _, err := e.svc.Feature(ctx, id); !errors.Is(err, lists.ErrFeatureNotFound) {
			t.Fatalf("version %q after delete: %v", v, err)
		}
	}
	fs, err := e.svc.Features(ctx, "")
	if err != nil || len(fs) != 2 {
		t.Fatalf("features left: %+v %v", fs, err)
	}
	sameItems(t, mustGet(t, e, keep, "alice", time.Time{}, 10), []lists.Item{item("k", t0)})
	// Again: nothing to delete, no error.
	if deleted, err := e.svc.DeleteFeature(ctx, feat.EntityType, feat.Feature); err != nil || len(deleted) != 0 {
		t.Fatalf("second delete: %q %v", deleted, err)
	}
	// Re-created, a version starts empty.
	mustCreate(t, e, feat, 30*day)
	if n := mustCount(t, e, feat, "alice"); n != 0 {
		t.Fatalf("re-created version counts %d", n)
	}
	if _, err := e.svc.DeleteFeature(ctx, "", "x"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("delete feature without an entity type: %v", err)
	}
}

package lists_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// runSuite runs every behaviour test against one backend, with parallel
// set each on a Store of its own at the same time: on Cassandra, whose
// schema changes and round trips make nearly all of the suite's time, they
// overlap (as the expiry suite's CQL variant does).
func runSuite(t *testing.T, f testbackend.Factory, parallel bool) {
	cases := []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"CreateFeature", testCreateFeature},
		{"AddGet", testAddGet},
		{"MinTimestampAndLimit", testMinTimestampAndLimit},
		{"Paging", testPaging},
		{"Expiry", testExpiry},
		{"TTLChange", testTTLChange},
		{"Rewrite", testRewrite},
		{"BadInput", testBadInput},
		{"UnknownFeature", testUnknownFeature},
		{"RemoveByValue", testRemoveByValue},
		{"RemoveAll", testRemoveAll},
		{"DeleteFeatureVersion", testDeleteFeatureVersion},
		{"Names", testNames},
		{"ConcurrentAdds", testConcurrentAdds},
		{"OtherProcess", testOtherProcess},
		{"Model", testModel},
		{"KeptPages", testKeptPages},
		{"MaxItems", testMaxItems},
		{"MaxItemsExpired", testMaxItemsExpired},
		{"MaxItemsRace", testMaxItemsRace},
		{"Count", testCount},
		{"DeleteFeature", testDeleteFeature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			c.run(t, newEnv(t, f))
		})
	}
}

var feat = lists.FeatureID{EntityType: "user", Feature: "stories_presented", Version: ""}

const day = 24 * time.Hour

func mustCreate(t testing.TB, e *env, id lists.FeatureID, ttl time.Duration) lists.Feature {
	t.Helper()
	f, _, err := e.svc.CreateFeature(context.Background(), id, ttl)
	if err != nil {
		t.Fatalf("create %v: %v", id, err)
	}
	return f
}

func mustAdd(t testing.TB, e *env, id lists.FeatureID, entity string, items ...lists.Item) lists.AddResult {
	t.Helper()
	res, err := e.svc.Add(context.Background(), id, entity, items)
	if err != nil {
		t.Fatalf("add to %q: %v", entity, err)
	}
	return res
}

func mustGet(t testing.TB, e *env, id lists.FeatureID, entity string, min time.Time, limit int) []lists.Item {
	t.Helper()
	items, err := e.svc.Get(context.Background(), id, entity, min, limit)
	if err != nil {
		t.Fatalf("get %q: %v", entity, err)
	}
	return items
}

func item(value string, ts time.Time) lists.Item {
	return lists.Item{Value: []byte(value), Timestamp: ts}
}

// sameItems compares items exactly: order, values and timestamps.
func sameItems(t testing.TB, got, want []lists.Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d items %s, want %d %s", len(got), show(got), len(want), show(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Value, want[i].Value) || !got[i].Timestamp.Equal(want[i].Timestamp) {
			t.Fatalf("item %d: got %s, want %s", i, show(got), show(want))
		}
	}
}

func show(items []lists.Item) string {
	var b strings.Builder
	b.WriteString("[")
	for i, it := range items {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%q@%s", it.Value, it.Timestamp.Format(time.RFC3339Nano))
	}
	return b.String() + "]"
}

func testCreateFeature(t *testing.T, e *env) {
	ctx := t.Context()
	f, created, err := e.svc.CreateFeature(ctx, feat, 30*day)
	if err != nil || !created {
		t.Fatalf("first create: created=%v err=%v", created, err)
	}
	if f.TTL != 30*day || !store.NamePattern.MatchString(f.Table) || !f.Created.Equal(start.Truncate(time.Millisecond)) {
		t.Fatalf("feature %+v", f)
	}
	again, created, err := e.svc.CreateFeature(ctx, feat, 30*day)
	if err != nil || created || again.Table != f.Table {
		t.Fatalf("identical create: %+v created=%v err=%v", again, created, err)
	}
	// Another TTL changes the version in place, for the items added from
	// then on; reads still look back the longest TTL it had.
	changed, created, err := e.svc.CreateFeature(ctx, feat, 7*day)
	if err != nil || created || changed.TTL != 7*day || changed.MaxTTL != 30*day || changed.Table != f.Table {
		t.Fatalf("create with another TTL: %+v created=%v err=%v, want the TTL changed in place", changed, created, err)
	}
	got, err := e.svc.Feature(ctx, feat)
	if err != nil || got.TTL != 7*day || got.MaxTTL != 30*day || got.Table != f.Table {
		t.Fatalf("feature after the change: %+v %v", got, err)
	}
	// Lengthened again, the longest TTL is the new one.
	if got, _, err := e.svc.CreateFeature(ctx, feat, 60*day); err != nil || got.TTL != 60*day || got.MaxTTL != 60*day {
		t.Fatalf("lengthened: %+v %v", got, err)
	}
	// Another version is another feature, with its own table.
	v2 := feat
	v2.Version = "v2"
	f2, created, err := e.svc.CreateFeature(ctx, v2, 7*day)
	if err != nil || !created || f2.Table == f.Table {
		t.Fatalf("version v2: %+v created=%v err=%v", f2, created, err)
	}
	infos, err := e.st.Tables(ctx, f.Table)
	if err != nil || len(infos) != 1 || infos[0].Spec.DefaultTTL != 30*day {
		t.Fatalf("feature table: %+v %v", infos, err)
	}
	for _, bad := range []struct {
		id  lists.FeatureID
		ttl time.Duration
	}{
		{lists.FeatureID{EntityType: "", Feature: "f"}, day},
		{lists.FeatureID{EntityType: "u", Feature: ""}, day},
		{lists.FeatureID{EntityType: "u\xff", Feature: "f"}, day},
		{lists.FeatureID{EntityType: "u", Feature: strings.Repeat("n", lists.MaxNameBytes+1)}, day},
		{lists.FeatureID{EntityType: "u", Feature: "f"}, 0},
		{lists.FeatureID{EntityType: "u", Feature: "f"}, -time.Hour},
		{lists.FeatureID{EntityType: "u", Feature: "f"}, time.Microsecond},
	} {
		if _, _, err := e.svc.CreateFeature(ctx, bad.id, bad.ttl); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("create %v ttl %s: %v, want ErrInvalid", bad.id, bad.ttl, err)
		}
	}
}

func testAddGet(t *testing.T, e *env) {
	mustCreate(t, e, feat, 30*day)
	t0 := start.Add(-time.Hour)
	res := mustAdd(t, e, feat, "alice",
		item("story-1", t0),
		item("story-3", t0.Add(2*time.Minute)),
		item("story-2", t0.Add(time.Minute)),
		// Equal timestamps with distinct values coexist.
		item("story-2b", t0.Add(time.Minute)),
		// The same item twice is one item.
		item("story-1", t0),
	)
	if res != (lists.AddResult{Written: 5}) {
		t.Fatalf("add: %+v", res)
	}
	got := mustGet(t, e, feat, "alice", time.Time{}, 100)
	// Newest first; equal timestamps by descending item key.
	tie := []lists.Item{item("story-2", t0.Add(time.Minute)), item("story-2b", t0.Add(time.Minute))}
	slices.SortFunc(tie, func(a, b lists.Item) int {
		return strings.Compare(lists.ItemKey(b.Timestamp, b.Value), lists.ItemKey(a.Timestamp, a.Value))
	})
	sameItems(t, got, []lists.Item{item("story-3", t0.Add(2*time.Minute)), tie[0], tie[1], item("story-1", t0)})
	// Another entity's list is another list.
	if got := mustGet(t, e, feat, "bob", time.Time{}, 100); len(got) != 0 {
		t.Fatalf("bob's list: %s", show(got))
	}
	// Re-adding an item replaces it; the list does not grow.
	mustAdd(t, e, feat, "alice", item("story-3", t0.Add(2*time.Minute)))
	if got := mustGet(t, e, feat, "alice", time.Time{}, 100); len(got) != 4 {
		t.Fatalf("after re-add: %s", show(got))
	}
	// Empty and binary values are values like any other.
	mustAdd(t, e, feat, "carol", item("", t0), lists.Item{Value: []byte{0, 0xff, 0}, Timestamp: t0.Add(time.Nanosecond)})
	sameItems(t, mustGet(t, e, feat, "carol", time.Time{}, 10),
		[]lists.Item{{Value: []byte{0, 0xff, 0}, Timestamp: t0.Add(time.Nanosecond)}, item("", t0)})
	// An empty add writes nothing and is fine.
	if res := mustAdd(t, e, feat, "alice"); res != (lists.AddResult{}) {
		t.Fatalf("empty add: %+v", res)
	}
	// Values are the caller's: the service keeps no reference to them.
	buf := []byte("mutable")
	mustAdd(t, e, feat, "dave", lists.Item{Value: buf, Timestamp: t0})
	buf[0] = 'X'
	sameItems(t, mustGet(t, e, feat, "dave", time.Time{}, 10), []lists.Item{item("mutable", t0)})
}

func testMinTimestampAndLimit(t *testing.T, e *env) {
	mustCreate(t, e, feat, 30*day)
	t0 := start.Add(-10 * time.Hour)
	var all []lists.Item
	for i := range 30 {
		all = append(all, item(fmt.Sprintf("v%02d", i), t0.Add(time.Duration(i)*time.Minute+time.Duration(i))))
	}
	mustAdd(t, e, feat, "alice", all...)
	newestFirst := slices.Clone(all)
	slices.Reverse(newestFirst)

	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 7), newestFirst[:7])
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 1), newestFirst[:1])
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 10000), newestFirst)
	// min_timestamp is inclusive, to the nanosecond.
	min := all[20].Timestamp
	sameItems(t, mustGet(t, e, feat, "alice", min, 100), newestFirst[:10])
	sameItems(t, mustGet(t, e, feat, "alice", min.Add(time.Nanosecond), 100), newestFirst[:9])
	sameItems(t, mustGet(t, e, feat, "alice", min, 3), newestFirst[:3])
	if got := mustGet(t, e, feat, "alice", start.Add(time.Hour), 100); len(got) != 0 {
		t.Fatalf("min timestamp in the future: %s", show(got))
	}
	// A min_timestamp before 1970 bounds nothing.
	sameItems(t, mustGet(t, e, feat, "alice", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), 100), newestFirst)
	// A zero limit is the default page, as for the HTTP API.
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 0), newestFirst)
	for _, limit := range []int{-1, store.MaxLimit + 1} {
		if _, err := e.svc.Get(t.Context(), feat, "alice", time.Time{}, limit); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("limit %d: %v, want ErrInvalid", limit, err)
		}
	}
}

func testExpiry(t *testing.T, e *env) {
	const ttl = time.Hour
	mustCreate(t, e, feat, ttl)
	// Item A expires exactly now: skipped. Item B expires 1 ns from now,
	// off the millisecond grid: written.
	a := item("a", start.Add(-ttl))
	b := item("b", start.Add(-ttl+time.Nanosecond))
	c := item("c", start.Add(-ttl/2))
	old := item("old", start.Add(-30*day))
	res := mustAdd(t, e, feat, "alice", a, b, c, old)
	if res != (lists.AddResult{Written: 2, SkippedExpired: 2}) {
		t.Fatalf("add: %+v", res)
	}
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), []lists.Item{c, b})
	// At exactly b's expiry it is gone; c lives on.
	e.clock.Advance(time.Nanosecond)
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), []lists.Item{c})
	e.clock.Set(c.Timestamp.Add(ttl - time.Nanosecond))
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), []lists.Item{c})
	e.clock.Set(c.Timestamp.Add(ttl))
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), nil)
	// An add made only of expired items writes nothing at all.
	if res := mustAdd(t, e, feat, "bob", old); res != (lists.AddResult{SkippedExpired: 1}) {
		t.Fatalf("expired-only add: %+v", res)
	}
	// Every item carries its own expiry in the store, so physical expiry
	// (and the backend's read-resolved expiry) needs nothing from this
	// package: read the rows directly.
	e.clock.Set(start)
	f, _ := e.svc.Feature(t.Context(), feat)
	page, err := kit.Query(t.Context(), e.st, f.Table, store.Query{Partition: []any{"alice"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != 2 {
		t.Fatalf("stored rows: %+v", page.Rows)
	}
	for _, r := range page.Rows {
		want := map[string]time.Time{"b": b.Timestamp.Add(ttl), "c": c.Timestamp.Add(ttl)}[string(r.Values[0].([]byte))]
		if r.ExpiresAt.Before(want) || r.ExpiresAt.Sub(want) >= time.Millisecond {
			t.Errorf("row %q expires at %s, want %s rounded up to the millisecond", r.Values[0], r.ExpiresAt, want)
		}
	}
}

func testBadInput(t *testing.T, e *env) {
	ctx := t.Context()
	mustCreate(t, e, feat, 30*day)
	t0 := start.Add(-time.Minute)
	tooMany := make([]lists.Item, lists.MaxItemsPerAdd+1)
	for i := range tooMany {
		tooMany[i] = item(fmt.Sprint(i), t0)
	}
	if _, err := e.svc.Add(ctx, feat, "alice", tooMany); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("%d items: %v, want ErrInvalid", len(tooMany), err)
	}
	// Exactly the limits are fine.
	if res := mustAdd(t, e, feat, "max", tooMany[:lists.MaxItemsPerAdd]...); res.Written != lists.MaxItemsPerAdd {
		t.Fatalf("add of %d: %+v", lists.MaxItemsPerAdd, res)
	}
	if got := mustGet(t, e, feat, "max", time.Time{}, 10000); len(got) != lists.MaxItemsPerAdd {
		t.Fatalf("list of %d items holds %d", lists.MaxItemsPerAdd, len(got))
	}
	big := bytes.Repeat([]byte{'x'}, lists.MaxValueBytes)
	mustAdd(t, e, feat, "big", lists.Item{Value: big, Timestamp: t0})

	var ie *store.MutationError
	_, err := e.svc.Add(ctx, feat, "alice", []lists.Item{item("ok", t0), {Value: append(big, 'x'), Timestamp: t0}})
	if !errors.Is(err, store.ErrTooLarge) || !errors.As(err, &ie) || ie.Index != 1 {
		t.Errorf("oversize value: %v, want ErrTooLarge naming item 1", err)
	}
	_, err = e.svc.Add(ctx, feat, "alice", []lists.Item{item("ok", t0), item("ok2", t0), item("neg", time.Unix(-1, 0))})
	if !errors.Is(err, store.ErrInvalid) || !errors.As(err, &ie) || ie.Index != 2 {
		t.Errorf("timestamp before 1970: %v, want ErrInvalid naming item 2", err)
	}
	for _, entity := range []string{"", "bad\xffutf8", strings.Repeat("e", lists.MaxNameBytes+1)} {
		if _, err := e.svc.Add(ctx, feat, entity, []lists.Item{item("ok", t0)}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("add to entity %q: %v, want ErrInvalid", entity, err)
		}
		if _, err := e.svc.Get(ctx, feat, entity, time.Time{}, 10); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("get entity %q: %v, want ErrInvalid", entity, err)
		}
	}
	if _, err := e.svc.RemoveByValue(ctx, feat, "alice", append(big, 'x')); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("remove by oversize value: %v, want ErrTooLarge", err)
	}
	// Nothing of a refused add was written.
	if got := mustGet(t, e, feat, "alice", time.Time{}, 100); len(got) != 0 {
		t.Fatalf("refused adds wrote %s", show(got))
	}
}

func testUnknownFeature(t *testing.T, e *env) {
	ctx := t.Context()
	mustCreate(t, e, feat, day)
	unknown := lists.FeatureID{EntityType: "user", Feature: "nope"}
	otherVersion := feat
	otherVersion.Version = "v9"
	for _, id := range []lists.FeatureID{unknown, otherVersion} {
		checks := map[string]error{}
		_, checks["add"] = e.svc.Add(ctx, id, "alice", []lists.Item{item("x", start)})
		_, checks["get"] = e.svc.Get(ctx, id, "alice", time.Time{}, 10)
		_, checks["remove by value"] = e.svc.RemoveByValue(ctx, id, "alice", []byte("x"))
		checks["remove all"] = e.svc.RemoveAll(ctx, id, "alice")
		checks["delete"] = e.svc.DeleteFeatureVersion(ctx, id)
		_, checks["feature"] = e.svc.Feature(ctx, id)
		for op, err := range checks {
			if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, lists.ErrFeatureNotFound) {
				t.Errorf("%s on %v: %v, want not found", op, id, err)
			}
		}
	}
}

func testRemoveByValue(t *testing.T, e *env) {
	mustCreate(t, e, feat, 30*day)
	t0 := start.Add(-time.Hour)
	var items, keep []lists.Item
	// 25 items of one value take three delete batches of at most 10.
	for i := range 25 {
		items = append(items, item("seen", t0.Add(time.Duration(i)*time.Second)))
	}
	for i := range 5 {
		it := item(fmt.Sprintf("other-%d", i), t0.Add(time.Duration(i)*time.Second))
		items = append(items, it)
		keep = append(keep, it)
	}
	mustAdd(t, e, feat, "alice", items...)
	mustAdd(t, e, feat, "bob", item("seen", t0))
	n, err := e.svc.RemoveByValue(t.Context(), feat, "alice", []byte("seen"))
	if err != nil || n != 25 {
		t.Fatalf("remove by value: %d, %v; want 25", n, err)
	}
	slices.Reverse(keep)
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), keep)
	// Only alice's list was touched.
	sameItems(t, mustGet(t, e, feat, "bob", time.Time{}, 100), []lists.Item{item("seen", t0)})
	if n, err := e.svc.RemoveByValue(t.Context(), feat, "alice", []byte("seen")); err != nil || n != 0 {
		t.Fatalf("second remove: %d, %v", n, err)
	}
	if n, err := e.svc.RemoveByValue(t.Context(), feat, "nobody", []byte("x")); err != nil || n != 0 {
		t.Fatalf("remove from an empty list: %d, %v", n, err)
	}
	// The value can be added again afterwards.
	mustAdd(t, e, feat, "alice", item("seen", t0))
	if got := mustGet(t, e, feat, "alice", time.Time{}, 100); len(got) != 6 {
		t.Fatalf("after re-add: %s", show(got))
	}
}

func testRemoveAll(t *testing.T, e *env) {
	mustCreate(t, e, feat, 30*day)
	t0 := start.Add(-time.Hour)
	mustAdd(t, e, feat, "alice", item("a", t0), item("b", t0.Add(time.Second)))
	mustAdd(t, e, feat, "alicf", item("kept", t0))
	if err := e.svc.RemoveAll(t.Context(), feat, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, e, feat, "alice", time.Time{}, 100); len(got) != 0 {
		t.Fatalf("after remove all: %s", show(got))
	}
	sameItems(t, mustGet(t, e, feat, "alicf", time.Time{}, 100), []lists.Item{item("kept", t0)})
	if err := e.svc.RemoveAll(t.Context(), feat, "never-written"); err != nil {
		t.Fatalf("remove all of an empty list: %v", err)
	}
	mustAdd(t, e, feat, "alice", item("c", t0))
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 100), []lists.Item{item("c", t0)})
}

func testDeleteFeatureVersion(t *testing.T, e *env) {
	ctx := t.Context()
	f := mustCreate(t, e, feat, 30*day)
	v2 := feat
	v2.Version = "v2"
	mustCreate(t, e, v2, 30*day)
	t0 := start.Add(-time.Hour)
	for _, entity := range []string{"alice", "bob", "carol"} {
		mustAdd(t, e, feat, entity, item("x", t0), item("y", t0))
		mustAdd(t, e, v2, entity, item("v2", t0))
	}
	if err := e.svc.DeleteFeatureVersion(ctx, feat); err != nil {
		t.Fatal(err)
	}
	// The whole version went with its table, in one drop.
	if infos, err := e.st.Tables(ctx, f.Table); err != nil || len(infos) != 0 {
		t.Fatalf("table %s after delete: %+v %v", f.Table, infos, err)
	}
	if _, err := e.svc.Get(ctx, feat, "alice", time.Time{}, 10); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := e.svc.DeleteFeatureVersion(ctx, feat); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// Other versions are untouched.
	sameItems(t, mustGet(t, e, v2, "bob", time.Time{}, 10), []lists.Item{item("v2", t0)})
	// Re-created, even with another TTL, the version starts empty.
	g, created, err := e.svc.CreateFeature(ctx, feat, day)
	if err != nil || !created || g.TTL != day {
		t.Fatalf("re-create: %+v %v %v", g, created, err)
	}
	if got := mustGet(t, e, feat, "alice", time.Time{}, 10); len(got) != 0 {
		t.Fatalf("re-created version holds %s", show(got))
	}
}

// testNames checks that names with separators, slashes and NUL never make
// two different (entity type, feature, version, entity) tuples share a list.
func testNames(t *testing.T, e *env) {
	ids := []lists.FeatureID{
		{EntityType: "a#b", Feature: "c", Version: ""},
		{EntityType: "a", Feature: "b#c", Version: ""},
		{EntityType: "a", Feature: "b", Version: "c"},
		{EntityType: "a|b", Feature: "c", Version: "d"},
		{EntityType: "a", Feature: "b|c", Version: "d"},
		{EntityType: "a", Feature: "b", Version: "c|d"},
		{EntityType: "a/b", Feature: "c", Version: "d"},
		{EntityType: "a", Feature: "b/c", Version: "d"},
		{EntityType: "a\x00b", Feature: "c", Version: ""},
		{EntityType: "a", Feature: "b\x00c", Version: ""},
		{EntityType: "a", Feature: "b", Version: "\x00"},
		{EntityType: "a", Feature: "b", Version: ""},
		{EntityType: "é\"ü", Feature: "[\"x\"]", Version: "\\"},
	}
	entities := []string{"x", "x\x00", "x\x00y", "x#y", "x/y", "x|y", "y"}
	t0 := start.Add(-time.Hour)
	tables := map[string]lists.FeatureID{}
	for i, id := range ids {
		f := mustCreate(t, e, id, day)
		if prev, dup := tables[f.Table]; dup {
			t.Fatalf("%v and %v share table %s", prev, id, f.Table)
		}
		tables[f.Table] = id
		for j, entity := range entities {
			mustAdd(t, e, id, entity, item(fmt.Sprintf("%d/%d", i, j), t0))
		}
	}
	for i, id := range ids {
		for j, entity := range entities {
			sameItems(t, mustGet(t, e, id, entity, time.Time{}, 10), []lists.Item{item(fmt.Sprintf("%d/%d", i, j), t0)})
		}
	}
}

func testConcurrentAdds(t *testing.T, e *env) {
	mustCreate(t, e, feat, 30*day)
	const writers, perWriter, batch = 8, 40, 5
	t0 := start.Add(-time.Hour)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < perWriter; i += batch {
				var items []lists.Item
				for k := i; k < i+batch; k++ {
					// Writers share timestamps, never values.
					items = append(items, item(fmt.Sprintf("w%d-%d", w, k), t0.Add(time.Duration(k)*time.Millisecond)))
				}
				if _, err := e.svc.Add(context.Background(), feat, "alice", items); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := mustGet(t, e, feat, "alice", time.Time{}, 10000)
	if len(got) != writers*perWriter {
		t.Fatalf("%d items after concurrent adds, want %d", len(got), writers*perWriter)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Timestamp.After(got[i-1].Timestamp) {
			t.Fatalf("not newest first at %d: %s then %s", i, got[i-1].Timestamp, got[i].Timestamp)
		}
	}
}

// testOtherProcess runs two Services on one Store, as two processes on one
// backend: each sees the other's features, and one notices at once that
// the other deleted a version it has cached.
func testOtherProcess(t *testing.T, e *env) {
	ctx := t.Context()
	other, err := lists.New(ctx, e.st, lists.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, e, feat, day)
	t0 := start.Add(-time.Minute)
	mustAdd(t, e, feat, "alice", item("a", t0))
	got, err := other.Get(ctx, feat, "alice", time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, got, []lists.Item{item("a", t0)})
	if _, created, err := other.CreateFeature(ctx, feat, day); err != nil || created {
		t.Fatalf("identical create from the other service: created=%v %v", created, err)
	}
	if f, created, err := other.CreateFeature(ctx, feat, 2*day); err != nil || created || f.TTL != 2*day {
		t.Fatalf("create with another TTL from the other service: %+v created=%v %v, want the TTL changed", f, created, err)
	}
	// The other service deletes the version: this one's cache does not
	// fool it.
	if err := other.DeleteFeatureVersion(ctx, feat); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Add(ctx, feat, "alice", []lists.Item{item("b", t0)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("add to a version deleted elsewhere: %v", err)
	}
	// Deleted and re-created elsewhere with another TTL under the same
	// table name, the version is seen anew once this service's cache entry
	// ages out.
	mustCreate(t, e, feat, day)
	if err := other.DeleteFeatureVersion(ctx, feat); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.CreateFeature(ctx, feat, 2*day); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(lists.DefaultCacheTTL)
	f, err := e.svc.Feature(ctx, feat)
	if err != nil || f.TTL != 2*day {
		t.Fatalf("feature seen after re-create elsewhere: %+v %v", f, err)
	}
}

// testPaging reads a list page by page: every item once, newest first,
// items of one timestamp split across pages included, with and without a
// min timestamp; a full last page's token leads to an empty page; a bad
// token is refused.
func testPaging(t *testing.T, e *env) {
	mustCreate(t, e, feat, 30*day)
	t0 := start.Add(-time.Hour)
	var items []lists.Item
	for i := range 25 {
		// Pairs of items share a timestamp, so pages split ties.
		items = append(items, item(fmt.Sprint("v", i), t0.Add(time.Duration(i/2)*time.Second)))
	}
	mustAdd(t, e, feat, "alice", items...)
	want := mustGet(t, e, feat, "alice", time.Time{}, 100)
	if len(want) != 25 {
		t.Fatalf("%d items, want 25", len(want))
	}
	read := func(rd lists.Read) ([]lists.Item, []int) {
		t.Helper()
		var got []lists.Item
		var sizes []int
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatal("paging does not end")
			}
			n, next, err := e.svc.Scan(context.Background(), feat, "alice", rd, func(it lists.Item) error {
				got = append(got, lists.Item{Value: bytes.Clone(it.Value), Timestamp: it.Timestamp})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
			if next == "" {
				return got, sizes
			}
			rd.PageToken = next
		}
	}
	got, sizes := read(lists.Read{Limit: 10})
	sameItems(t, got, want)
	if !slices.Equal(sizes, []int{10, 10, 5}) {
		t.Fatalf("page sizes %v, want [10 10 5]", sizes)
	}
	got, sizes = read(lists.Read{Limit: 5})
	sameItems(t, got, want)
	if !slices.Equal(sizes, []int{5, 5, 5, 5, 5, 0}) {
		t.Fatalf("page sizes %v, want five full pages and an empty one", sizes)
	}
	minTS := t0.Add(6 * time.Second) // items 12..24
	got, _ = read(lists.Read{MinTimestamp: minTS, Limit: 4})
	sameItems(t, got, want[:13])
	for _, bad := range []string{"x", "AQ", "AXh4eA", strings.Repeat("A", 60)} {
		if _, _, err := e.svc.Scan(context.Background(), feat, "alice", lists.Read{Limit: 10, PageToken: bad}, func(lists.Item) error { return nil }); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("page token %q: %v, want ErrInvalid", bad, err)
		}
	}
}

package lists_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
)

// testKeptPages checks Stamp and Fresh against the list itself, with no
// model: random adds, removals, TTL changes (longer and shorter, so that
// items of one version live under different TTLs and reads pass rows
// over) and clock steps to every boundary an item has (its expiry under
// each TTL the version had, to the nanosecond and rounded up to the
// millisecond as the store keeps it, a nanosecond either side), and after
// each, every page kept so far that Fresh calls fresh must read the same
// again. On a store without generations no page is ever kept.
func testKeptPages(t *testing.T, e *env) {
	ctx := context.Background()
	_, gens := store.As[store.Generations](e.st)
	if !gens {
		// Nothing is kept, so there is nothing to draw at random; and each
		// check's feature version would be a table, whose DDL on a remote
		// backend costs a second or more.
		id := lists.FeatureID{EntityType: "kept", Feature: "f", Version: "remote"}
		mustCreate(t, e, id, time.Hour)
		mustAdd(t, e, id, "a", item("x", start))
		st := new(lists.Stamp)
		if page, n := scanPage(t, e, id, "a", time.Time{}, 10, st); n != 1 || st.Kept() || e.svc.Fresh(ctx, id, "a", st) {
			t.Fatalf("on a store without generations: page %s kept %v", page, st.Kept())
		}
		return
	}
	checks := 0
	var counts keptCounts
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		e.clock.Set(start)
		id := lists.FeatureID{EntityType: "kept", Feature: "f", Version: strconv.Itoa(checks)}
		ttls := []time.Duration{time.Duration(rapid.IntRange(1, 30).Draw(rt, "ttl_seconds")) * time.Second}
		if _, _, err := e.svc.CreateFeature(ctx, id, ttls[0]); err != nil {
			rt.Fatalf("create: %v", err)
		}
		entities := rapid.SampledFrom([]string{"a", "b"})
		var added []time.Time
		kp := &keptPages{e: e, id: id, counts: &counts}
		read := func(rt *rapid.T) {
			entity, limit := entities.Draw(rt, "entity"), rapid.IntRange(1, 4).Draw(rt, "limit")
			if page, kept := kp.read(rt, entity, time.Time{}, limit); !kept && !strings.HasPrefix(page, "[]") {
				rt.Fatalf("a page of items (%s) not kept on a store with generations", page)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"read": read,
			"add": func(rt *rapid.T) {
				ts := e.clock.Now().Add(-time.Duration(rapid.IntRange(0, 40_000).Draw(rt, "age_ms"))*time.Millisecond +
					time.Duration(rapid.IntRange(0, 999_999).Draw(rt, "sub_ns")))
				value := []byte(rapid.SampledFrom([]string{"x", "y", "z"}).Draw(rt, "value"))
				if _, err := e.svc.Add(ctx, id, entities.Draw(rt, "entity"), []lists.Item{{Value: value, Timestamp: ts}}); err != nil {
					rt.Fatalf("add: %v", err)
				}
				added = append(added, ts)
				kp.recheck(rt)
			},
			"remove": func(rt *rapid.T) {
				value := []byte(rapid.SampledFrom([]string{"x", "y", "z"}).Draw(rt, "value"))
				if _, err := e.svc.RemoveByValue(ctx, id, entities.Draw(rt, "entity"), value); err != nil {
					rt.Fatalf("remove: %v", err)
				}
				kp.recheck(rt)
			},
			"ttl": func(rt *rapid.T) {
				ttl := time.Duration(rapid.IntRange(1, 30).Draw(rt, "new_ttl_seconds")) * time.Second
				if _, _, err := e.svc.CreateFeature(ctx, id, ttl); err != nil {
					rt.Fatalf("change ttl: %v", err)
				}
				ttls = append(ttls, ttl)
				kp.recheck(rt)
			},
			"to_boundary": func(rt *rapid.T) {
				if len(added) == 0 {
					rt.Skip("nothing added")
				}
				ts := added[rapid.IntRange(0, len(added)-1).Draw(rt, "item")]
				to := ts.Add(ttls[rapid.IntRange(0, len(ttls)-1).Draw(rt, "which_ttl")])
				if rapid.Bool().Draw(rt, "store_rounding") {
					to = to.Truncate(time.Millisecond).Add(time.Millisecond)
				}
				to = to.Add(time.Duration(rapid.IntRange(-1, 1).Draw(rt, "delta_ns")))
				if !to.After(e.clock.Now()) {
					rt.Skip("in the past")
				}
				e.clock.Set(to)
				kp.recheck(rt)
				// A read between an item's exact expiry and the store's,
				// which passes the item over.
				read(rt)
			},
			"advance": func(rt *rapid.T) {
				e.clock.Advance(time.Duration(rapid.IntRange(0, 5000).Draw(rt, "advance_ms")) * time.Millisecond)
				kp.recheck(rt)
			},
		})
	})
	if counts.fresh == 0 || counts.stale == 0 {
		t.Fatalf("pages found fresh %d times and stale %d: the check needs both", counts.fresh, counts.stale)
	}
}

// keptPages holds the pages a check read with a Stamp, and checks them
// against the list: while Fresh holds for one, reading it again must give
// the same page.
type keptPages struct {
	e      *env
	id     lists.FeatureID
	pages  []keptRead
	counts *keptCounts // over every check of a test
}

type keptRead struct {
	entity string
	min    time.Time
	limit  int
	page   string
	stamp  *lists.Stamp
}

// keptCounts counts the pages found fresh and stale.
type keptCounts struct{ fresh, stale int }

// read reads a page with a Stamp and keeps it if the Stamp lets it be.
func (k *keptPages) read(rt *rapid.T, entity string, min time.Time, limit int) (page string, kept bool) {
	st := new(lists.Stamp)
	page, _ = scanPage(rt, k.e, k.id, entity, min, limit, st)
	if st.Kept() {
		k.pages = append(k.pages, keptRead{entity, min, limit, page, st})
	}
	return page, st.Kept()
}

// recheck reads every page still fresh again, and forgets the stale ones.
func (k *keptPages) recheck(rt *rapid.T) {
	ctx := context.Background()
	live := k.pages[:0]
	for _, p := range k.pages {
		if !k.e.svc.Fresh(ctx, k.id, p.entity, p.stamp) {
			k.counts.stale++
			continue
		}
		k.counts.fresh++
		if page, _ := scanPage(rt, k.e, k.id, p.entity, p.min, p.limit, nil); page != p.page {
			rt.Fatalf("page of %q (min %s, limit %d), fresh at %s, reads otherwise:\n kept %s\n now  %s",
				p.entity, p.min.Format(time.RFC3339Nano), p.limit, k.e.clock.Now().Format(time.RFC3339Nano), p.page, page)
		}
		live = append(live, p)
	}
	k.pages = live
}

// TestKeptPagePassedOverRow: a row the read passed over (expired to the
// nanosecond, still in the store until its expiry rounded up to the
// millisecond) holds a place in the store's page; once the store drops it,
// the row after it moves in, so the kept page goes stale then, although no
// item of it expired. It takes two TTLs: an item added under the shorter
// one, then an older item under the longer one.
func TestKeptPagePassedOverRow(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, testbackend.Pebble)
	id := lists.FeatureID{EntityType: "kept", Feature: "passed", Version: "1"}
	mustCreate(t, e, id, time.Second)
	mustAdd(t, e, id, "alice", item("a", start))
	mustCreate(t, e, id, 10*time.Second)
	mustAdd(t, e, id, "alice", item("b", start.Add(-time.Millisecond)))

	e.clock.Set(start.Add(time.Second)) // a's expiry to the nanosecond
	st := new(lists.Stamp)
	var got []string
	_, next, err := e.svc.Scan(ctx, id, "alice", lists.Read{Limit: 1, Stamp: st}, func(it lists.Item) error {
		got = append(got, string(it.Value))
		return nil
	})
	if err != nil || len(got) != 0 || next == "" || !st.Kept() {
		t.Fatalf("page at a's expiry: %v next %q kept %v, %v; want no item, a next page, kept", got, next, st.Kept(), err)
	}
	if !e.svc.Fresh(ctx, id, "alice", st) {
		t.Fatal("not fresh at once")
	}
	// The store drops a at its expiry rounded up to the millisecond.
	e.clock.Set(start.Add(time.Second).Truncate(time.Millisecond).Add(time.Millisecond))
	if items := mustGet(t, e, id, "alice", time.Time{}, 1); len(items) != 1 || string(items[0].Value) != "b" {
		t.Fatalf("after the store dropped a: %s, want b", show(items))
	}
	if e.svc.Fresh(ctx, id, "alice", st) {
		t.Fatal("the page kept from before the store dropped a is still fresh")
	}
}

package lists_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
)

// model is the reference: per entity, the items by item key, expiry
// applied when read.
type model struct {
	ttl   time.Duration
	lists map[string]map[string]lists.Item
}

func (m *model) add(now time.Time, entity string, items []lists.Item) lists.AddResult {
	var res lists.AddResult
	for _, it := range items {
		if !it.Timestamp.Add(m.ttl).After(now) {
			res.SkippedExpired++
			continue
		}
		res.Written++
		if m.lists[entity] == nil {
			m.lists[entity] = map[string]lists.Item{}
		}
		m.lists[entity][lists.ItemKey(it.Timestamp, it.Value)] = it
	}
	return res
}

func (m *model) live(now time.Time, it lists.Item) bool { return it.Timestamp.Add(m.ttl).After(now) }

func (m *model) get(now time.Time, entity string, minTS time.Time, limit int) []lists.Item {
	var keys []string
	for k, it := range m.lists[entity] {
		if m.live(now, it) && !it.Timestamp.Before(minTS) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	out := []lists.Item{}
	for _, k := range keys[:min(limit, len(keys))] {
		out = append(out, m.lists[entity][k])
	}
	return out
}

func (m *model) removeByValue(now time.Time, entity string, value []byte) int {
	n := 0
	for k, it := range m.lists[entity] {
		if bytes.Equal(it.Value, value) {
			if m.live(now, it) {
				n++
			}
			delete(m.lists[entity], k)
		}
	}
	return n
}

// testModel drives the Service and the model with the same random
// operations and compares every read. Timestamps, values and clock steps
// are drawn from small sets so that equal timestamps, repeated values and
// expiry boundaries off the millisecond grid come up often.
//
// Each check starts from empty lists: its entities carry the check's
// number. The checks drawing the same TTL share a feature version, which
// the first of them creates: a version is a table, and creating and
// dropping one per check made the DDL of a remote backend (over a second
// a check on Cassandra) nearly all of the test's time.
func testModel(t *testing.T, e *env) {
	ctx := context.Background()
	checks := 0
	var counts keptCounts
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		ttlSeconds := rapid.IntRange(1, 60).Draw(rt, "ttl_seconds")
		ttl := time.Duration(ttlSeconds) * time.Second
		id := lists.FeatureID{EntityType: "model", Feature: "f", Version: strconv.Itoa(ttlSeconds)}
		e.clock.Set(start)
		if _, _, err := e.svc.CreateFeature(ctx, id, ttl); err != nil {
			rt.Fatalf("create: %v", err)
		}
		m := &model{ttl: ttl, lists: map[string]map[string]lists.Item{}}
		p := strconv.Itoa(checks) + ":"
		entities := rapid.SampledFrom([]string{p + "a", p + "a\x00", p + "b#c", p + "b/c"})
		values := rapid.SampledFrom([]string{"", "x", "y", "xy", "\x00"})
		sub := rapid.SampledFrom([]time.Duration{0, 1, -1, time.Millisecond - 1, time.Millisecond, 500 * time.Microsecond})
		// A timestamp is either on a grid fixed for the whole run (so that
		// separate adds hit the same item keys) or relative to now (so that
		// timestamp + TTL lands exactly on now, or a nanosecond either
		// side of it).
		timestamp := func(rt *rapid.T) time.Time {
			secs := time.Duration(rapid.IntRange(-70, 5).Draw(rt, "ts_seconds")) * time.Second
			base := start
			if rapid.Bool().Draw(rt, "relative") {
				base = e.clock.Now()
			}
			return base.Add(secs + sub.Draw(rt, "ts_sub"))
		}
		// Pages read with a Stamp, each checked after every operation.
		kp := &keptPages{e: e, id: id, counts: &counts}
		check := func(rt *rapid.T, entity string, min time.Time, limit int) {
			kp.recheck(rt)
			kp.read(rt, entity, min, limit)
			got, err := e.svc.Get(ctx, id, entity, min, limit)
			if err != nil {
				rt.Fatalf("get: %v", err)
			}
			want := m.get(e.clock.Now(), entity, min, limit)
			if show(got) != show(want) {
				rt.Fatalf("get %q min %s limit %d at %s:\n got  %s\n want %s", entity, min.Format(time.RFC3339Nano), limit,
					e.clock.Now().Format(time.RFC3339Nano), show(got), show(want))
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"add": func(rt *rapid.T) {
				entity := entities.Draw(rt, "entity")
				n := rapid.IntRange(0, 8).Draw(rt, "n")
				items := make([]lists.Item, n)
				for i := range items {
					items[i] = lists.Item{Value: []byte(values.Draw(rt, "value")), Timestamp: timestamp(rt)}
				}
				got, err := e.svc.Add(ctx, id, entity, items)
				if err != nil {
					rt.Fatalf("add: %v", err)
				}
				if want := m.add(e.clock.Now(), entity, items); got != want {
					rt.Fatalf("add result %+v, model %+v", got, want)
				}
				kp.recheck(rt)
			},
			"get": func(rt *rapid.T) {
				entity := entities.Draw(rt, "entity")
				var min time.Time
				if rapid.Bool().Draw(rt, "bounded") {
					min = timestamp(rt)
				}
				check(rt, entity, min, rapid.IntRange(1, 12).Draw(rt, "limit"))
			},
			"remove_by_value": func(rt *rapid.T) {
				entity := entities.Draw(rt, "entity")
				value := []byte(values.Draw(rt, "value"))
				got, err := e.svc.RemoveByValue(ctx, id, entity, value)
				if err != nil {
					rt.Fatalf("remove by value: %v", err)
				}
				if want := m.removeByValue(e.clock.Now(), entity, value); got != want {
					rt.Fatalf("remove by value %q removed %d, model %d", value, got, want)
				}
				kp.recheck(rt)
			},
			"remove_all": func(rt *rapid.T) {
				entity := entities.Draw(rt, "entity")
				if err := e.svc.RemoveAll(ctx, id, entity); err != nil {
					rt.Fatalf("remove all: %v", err)
				}
				delete(m.lists, entity)
				kp.recheck(rt)
			},
			// Move the clock to an item's exact expiry, or a nanosecond
			// either side of it: the boundary the store's millisecond
			// precision must not blur.
			"to_expiry": func(rt *rapid.T) {
				entity := entities.Draw(rt, "entity")
				keys := slices.Sorted(maps.Keys(m.lists[entity]))
				if len(keys) == 0 {
					rt.Skip("empty list")
				}
				it := m.lists[entity][keys[rapid.IntRange(0, len(keys)-1).Draw(rt, "item")]]
				to := it.Timestamp.Add(ttl + time.Duration(rapid.IntRange(-1, 1).Draw(rt, "delta_ns")))
				if !to.After(e.clock.Now()) {
					rt.Skip("in the past")
				}
				e.clock.Set(to)
				check(rt, entity, time.Time{}, 100)
			},
			"advance": func(rt *rapid.T) {
				secs := rapid.IntRange(0, 20).Draw(rt, "advance_seconds")
				e.clock.Advance(max(0, time.Duration(secs)*time.Second+sub.Draw(rt, "advance_sub")))
				kp.recheck(rt)
			},
		})
	})
	// On a store that keeps generations (the embedded one) pages are kept
	// and found fresh; the check above is not vacuous there.
	if _, ok := store.As[store.Generations](e.st); ok && counts.fresh == 0 {
		t.Fatal("no kept page was ever fresh on a store with generations")
	}
}

// scanPage reads a page with Scan, stamping it into st when st is not nil,
// and shows its items and next page token.
func scanPage(rt interface{ Fatalf(string, ...any) }, e *env, id lists.FeatureID, entity string, min time.Time, limit int, st *lists.Stamp) (string, int) {
	var items []lists.Item
	n, next, err := e.svc.Scan(context.Background(), id, entity, lists.Read{MinTimestamp: min, Limit: limit, Stamp: st}, func(it lists.Item) error {
		items = append(items, lists.Item{Value: bytes.Clone(it.Value), Timestamp: it.Timestamp})
		return nil
	})
	if err != nil {
		rt.Fatalf("scan: %v", err)
	}
	return show(items) + " next " + next, n
}

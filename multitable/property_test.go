package multitable

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"

	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/store/storetest"
)

// modelTable is the reference model of one logical table.
type modelTable struct {
	ttl   time.Duration
	items map[string]Item
}

// TestProperty runs random sequences of table and item operations, with a
// moving clock, against the embedded backend and a plain in-memory model,
// and compares every read and every listing (at random page sizes and
// lower bounds). Names and keys are drawn from small adversarial sets so
// that prefixes, separators and NUL bytes meet often.
func TestProperty(t *testing.T) {
	names := []string{"a", "a_b", "ab", "a.b"}
	keyset := []string{"x", "b_x", "b", "\x00", "x\x00", "_x", "xx", "#"}
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		clock := storetest.NewClock(t0)
		st, err := ebbpebble.Open("db", ebbpebble.Options{Now: clock.Now, FS: vfs.NewMem(), NoSync: true})
		if err != nil {
			rt.Fatal(err)
		}
		defer st.Close()
		reg, err := New(ctx, st, Options{Now: clock.Now, BucketWidth: time.Minute})
		if err != nil {
			rt.Fatal(err)
		}
		model := map[string]*modelTable{}
		live := func(it Item) bool { return it.ExpiresAt.IsZero() || clock.Now().Before(it.ExpiresAt) }
		genTime := rapid.Custom(func(rt *rapid.T) time.Time {
			return t0.Add(time.Duration(rapid.IntRange(-5, 300).Draw(rt, "minute")) * time.Minute).
				Add(time.Duration(rapid.IntRange(0, 2).Draw(rt, "ms")) * time.Millisecond)
		})
		rt.Repeat(map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				name := rapid.SampledFrom(names).Draw(rt, "table")
				ttl := time.Duration(rapid.IntRange(0, 3).Draw(rt, "ttl")) * 10 * time.Minute
				_, created, err := reg.CreateTable(ctx, name, Config{DefaultTTL: ttl})
				m, exists := model[name]
				switch {
				case !exists:
					if err != nil || !created {
						rt.Fatalf("create %s: %v %v", name, created, err)
					}
					model[name] = &modelTable{ttl: ttl, items: map[string]Item{}}
				case m.ttl == ttl:
					if err != nil || created {
						rt.Fatalf("identical create %s: %v %v", name, created, err)
					}
				default:
					// Another default TTL changes the table for the puts
					// that follow; items already put keep their expiry.
					if err != nil || created {
						rt.Fatalf("create %s with another default TTL: %v %v", name, created, err)
					}
					m.ttl = ttl
				}
			},
			"dropTable": func(rt *rapid.T) {
				name := rapid.SampledFrom(names).Draw(rt, "table")
				if err := reg.DeleteTable(ctx, name); err != nil {
					rt.Fatal(err)
				}
				delete(model, name)
			},
			"put": func(rt *rapid.T) {
				name := rapid.SampledFrom(names).Draw(rt, "table")
				key := rapid.SampledFrom(keyset).Draw(rt, "key")
				ts := genTime.Draw(rt, "ts")
				var ttl *time.Duration
				if c := rapid.IntRange(0, 2).Draw(rt, "ttlChoice"); c > 0 {
					d := time.Duration(c-1) * 7 * time.Minute
					ttl = &d
				}
				doc, _ := json.Marshal(map[string]any{"t": name, "k": key, "ts": ts.UnixMilli()})
				attrs := string(doc)
				got, err := reg.Put(ctx, name, PutItem{Key: key, Timestamp: ts, Attributes: json.RawMessage(attrs), TTL: ttl})
				m, ok := model[name]
				if !ok {
					if !errors.Is(err, ErrNoTable) {
						rt.Fatalf("put into missing %s: %v", name, err)
					}
					return
				}
				if err != nil {
					rt.Fatal(err)
				}
				d := m.ttl
				if ttl != nil {
					d = *ttl
				}
				want := Item{Key: key, Timestamp: ts, Attributes: json.RawMessage(attrs)}
				if d > 0 {
					want.ExpiresAt = clock.Now().Add(d)
				}
				if !itemEqual(got, want) {
					rt.Fatalf("put returned %+v, want %+v", got, want)
				}
				m.items[key] = want
			},
			"delete": func(rt *rapid.T) {
				name := rapid.SampledFrom(names).Draw(rt, "table")
				key := rapid.SampledFrom(keyset).Draw(rt, "key")
				err := reg.Delete(ctx, name, key)
				if m, ok := model[name]; ok {
					if err != nil {
						rt.Fatal(err)
					}
					delete(m.items, key)
				} else if !errors.Is(err, ErrNoTable) {
					rt.Fatalf("delete in missing %s: %v", name, err)
				}
			},
			"advance": func(rt *rapid.T) {
				clock.Advance(time.Duration(rapid.IntRange(1, 20).Draw(rt, "minutes")) * time.Minute)
			},
			"get": func(rt *rapid.T) {
				name := rapid.SampledFrom(names).Draw(rt, "table")
				key := rapid.SampledFrom(keyset).Draw(rt, "key")
				got, err := reg.Get(ctx, name, key)
				m, ok := model[name]
				if !ok {
					if !errors.Is(err, ErrNoTable) {
						rt.Fatalf("get in missing %s: %v", name, err)
					}
					return
				}
				want, ok := m.items[key]
				if ok && !live(want) {
					ok = false
				}
				if !ok {
					if !errors.Is(err, ErrNoItem) {
						rt.Fatalf("get %s/%q: %+v %v, want not found", name, key, got, err)
					}
					return
				}
				if err != nil || !itemEqual(got, want) {
					rt.Fatalf("get %s/%q: %+v %v, want %+v", name, key, got, err, want)
				}
			},
			"list": func(rt *rapid.T) {
				name := rapid.SampledFrom(names).Draw(rt, "table")
				m, ok := model[name]
				if !ok {
					return
				}
				var after *time.Time
				if rapid.Bool().Draw(rt, "bounded") {
					a := genTime.Draw(rt, "after")
					after = &a
				}
				limit := rapid.IntRange(1, 4).Draw(rt, "limit")
				var want []Item
				for _, it := range m.items {
					if live(it) && (after == nil || it.Timestamp.After(*after)) {
						want = append(want, it)
					}
				}
				sort.Slice(want, func(i, j int) bool { return less(want[i], want[j]) })
				var got []Item
				q := ListQuery{After: after, Limit: limit}
				for {
					page, err := reg.List(ctx, name, q)
					if err != nil {
						rt.Fatal(err)
					}
					got = append(got, page.Items...)
					if page.NextPageToken == "" {
						break
					}
					q.PageToken = page.NextPageToken
				}
				if !slices.EqualFunc(got, want, itemEqual) {
					rt.Fatalf("list %s after %v limit %d:\n got %q\nwant %q", name, after, limit, keys(got), keys(want))
				}
			},
		})
	})
}

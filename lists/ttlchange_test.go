package lists_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/lists"
)

// testTTLChange changes a feature's TTL in place, shorter then longer:
// items added before a change keep the expiry they were added with, to
// the nanosecond, items added after it get the new TTL, and a page that
// passes over items expired under a shorter TTL still leads to the next.
func testTTLChange(t *testing.T, e *env) {
	ctx := t.Context()
	mustCreate(t, e, feat, time.Hour)
	mustAdd(t, e, feat, "alice", item("old", start))

	// Shortened: the old item keeps its hour, a new one gets 10 minutes.
	f, created, err := e.svc.CreateFeature(ctx, feat, 10*time.Minute)
	if err != nil || created || f.TTL != 10*time.Minute || f.MaxTTL != time.Hour {
		t.Fatalf("shorten: %+v created=%v %v", f, created, err)
	}
	mustAdd(t, e, feat, "alice", item("new", start))
	both := []lists.Item{item("old", start), item("new", start)}
	slices.SortFunc(both, func(a, b lists.Item) int { // equal timestamps: by descending item key
		return strings.Compare(lists.ItemKey(b.Timestamp, b.Value), lists.ItemKey(a.Timestamp, a.Value))
	})
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 10), both)
	e.clock.Set(start.Add(10*time.Minute - time.Nanosecond))
	if got := mustGet(t, e, feat, "alice", time.Time{}, 10); len(got) != 2 {
		t.Fatalf("1ns before the new TTL: %s", show(got))
	}
	e.clock.Set(start.Add(10 * time.Minute))
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 10), []lists.Item{item("old", start)})
	e.clock.Set(start.Add(time.Hour - time.Nanosecond))
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 10), []lists.Item{item("old", start)})
	e.clock.Set(start.Add(time.Hour))
	sameItems(t, mustGet(t, e, feat, "alice", time.Time{}, 10), nil)

	// Pages over items expired under the shorter TTL: a page of 2 whose
	// rows are all passed over still says where the next one starts.
	now := e.clock.Now()
	for i := range 4 {
		mustAdd(t, e, feat, "bob", item(fmt.Sprint("gone", i), now.Add(-time.Duration(i+1)*time.Millisecond)))
	}
	if _, _, err := e.svc.CreateFeature(ctx, feat, time.Hour); err != nil {
		t.Fatal(err)
	}
	var want []lists.Item
	for i := range 3 {
		it := item(fmt.Sprint("keep", i), now.Add(-time.Duration(10+i)*time.Second))
		want = append(want, it)
		mustAdd(t, e, feat, "bob", it)
	}
	mustAdd(t, e, feat, "bob", item("hour", now))
	if _, _, err := e.svc.CreateFeature(ctx, feat, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	// The "gone" items, added under 10 minutes, have expired; the others,
	// added under an hour, have not.
	e.clock.Set(now.Add(10*time.Minute - time.Millisecond/2))
	var got []lists.Item
	token := ""
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("pages never end")
		}
		var page []lists.Item
		_, next, err := e.svc.Scan(ctx, feat, "bob", lists.Read{Limit: 2, PageToken: token}, func(it lists.Item) error {
			page = append(page, lists.Item{Value: append([]byte(nil), it.Value...), Timestamp: it.Timestamp})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if next == "" {
			break
		}
		token = next
	}
	sameItems(t, got, append([]lists.Item{item("hour", now)}, want...))

	// Lengthened: items added before keep their shorter expiry.
	e.clock.Set(now)
	mustAdd(t, e, feat, "carol", item("short", now))
	if f, _, err := e.svc.CreateFeature(ctx, feat, 3*time.Hour); err != nil || f.MaxTTL != 3*time.Hour {
		t.Fatalf("lengthen: %+v %v", f, err)
	}
	mustAdd(t, e, feat, "carol", item("long", now))
	e.clock.Set(now.Add(10 * time.Minute))
	sameItems(t, mustGet(t, e, feat, "carol", time.Time{}, 10), []lists.Item{item("long", now)})
	e.clock.Set(now.Add(3*time.Hour - time.Nanosecond))
	sameItems(t, mustGet(t, e, feat, "carol", time.Time{}, 10), []lists.Item{item("long", now)})
	e.clock.Set(now.Add(3 * time.Hour))
	sameItems(t, mustGet(t, e, feat, "carol", time.Time{}, 10), nil)
}

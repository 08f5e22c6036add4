package multitable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Tests of the guarded item writes: what a put and a delete cost, and the
// races in which a listing fences a put still in flight.

// testPutCost counts the store calls of puts and deletes: a put reads its
// item once and writes its entry and its item (and, when it replaces an
// item, removes the old entry); an item without expiry also reads its
// bucket row back. On a store that takes a guarded batch, the entry and
// the item are one write.
func testPutCost(t *testing.T, b backend) {
	e := newEnv(t, b)
	one := int64(0) // the write a guarded batch saves
	if e.reg.guarded {
		one = 1
	}
	e.create("t", time.Hour)
	e.create("forever", 0)
	e.put("t", "warm", at(0), `{}`, nil) // table record and bucket row cached
	e.put("forever", "warm", at(0), `{}`, nil)
	cost := func(f func()) (reads, writes int64) {
		r0, w0 := e.cnt.reads(), e.cnt.writes.Load()
		f()
		return e.cnt.reads() - r0, e.cnt.writes.Load() - w0
	}
	for _, c := range []struct {
		name          string
		f             func()
		reads, writes int64
	}{
		{"new key", func() { e.put("t", "k", at(time.Minute), `{"v":1}`, nil) }, 1, 2 - one},
		{"same timestamp", func() { e.put("t", "k", at(time.Minute), `{"v":2}`, nil) }, 1, 3 - one},
		{"moved", func() { e.put("t", "k", at(2*time.Minute), `{"v":3}`, nil) }, 1, 3 - one},
		{"no expiry, new key", func() { e.put("forever", "k", at(time.Minute), `{}`, nil) }, 2, 2 - one},
		{"delete", func() {
			if err := e.reg.Delete(e.ctx, "t", "k"); err != nil {
				t.Fatal(err)
			}
		}, 1, 2},
	} {
		if r, w := cost(c.f); r != c.reads || w != c.writes {
			t.Errorf("%s: %d reads and %d writes, want %d and %d", c.name, r, w, c.reads, c.writes)
		}
	}
	if n := testCounter(t, e.reg.metrics.conflicts); n != 0 {
		t.Fatalf("%v conflicts without any concurrent writer", n)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"warm"}) {
		t.Fatalf("listing = %q, want [warm]", got)
	}
}

// testRaceListingFencesNewPut runs a listing between a put's entry write
// and its item write, for a key with no item yet: the listing finds an
// entry whose item is absent, fences the item row and removes the entry.
// The put's guarded write must then fail and start over, or its item
// would land unlisted. On a store that takes a guarded batch, the entry
// and the item land together: the listing finds neither, and nothing is
// fenced or retried.
func testRaceListingFencesNewPut(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", time.Hour)
	raced := int64(1) // stale entries fenced, and attempts started over
	if e.reg.guarded {
		raced = 0
	}
	e.once(func(batch []store.Mutation) bool { return isItemWrite(batch, "k") }, func() {
		// A put stalled past the grace a listing gives puts in flight.
		e.clock.Advance(inFlightGrace)
		if got := keys(e.listAll("t", nil, 10)); len(got) != 0 {
			t.Errorf("listing during the put = %q, want none", got)
		}
	})
	e.put("t", "k", at(0), `{"v":1}`, nil)
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing after the race = %q, want [k]", got)
	}
	if n := testCounter(t, e.reg.metrics.repairs.WithLabelValues("stale_entry")); n != float64(raced) {
		t.Fatalf("%v stale entries removed, want %d", n, raced)
	}
	if n := testCounter(t, e.reg.metrics.conflicts); n != float64(raced) {
		t.Fatalf("%v conflicts, want %d (the fenced attempt)", n, raced)
	}
	// The item outlives the fence's expiry too: the fence is overwritten.
	e.clock.Advance(30 * time.Minute)
	if it, ok := e.get("t", "k"); !ok || string(it.Attributes) != `{"v":1}` {
		t.Fatalf("item = %+v %v", it, ok)
	}
}

// testRaceListingFencesMove is the same race for a put that moves an
// existing item: the listing meets the new entry while the item still has
// its old timestamp, and fences the item by giving it a new version. On a
// store that takes a guarded batch, the listing meets the item as it was,
// and nothing is fenced.
func testRaceListingFencesMove(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", time.Hour)
	raced := 1
	if e.reg.guarded {
		raced = 0
	}
	e.put("t", "k", at(0), `{"v":0}`, nil)
	e.once(func(batch []store.Mutation) bool { return isItemWrite(batch, "k") }, func() {
		e.clock.Advance(inFlightGrace)
		if got := e.listAll("t", nil, 10); len(got) != 1 || !got[0].Timestamp.Equal(at(0)) {
			t.Errorf("listing during the move = %+v, want k at T0", got)
		}
	})
	e.put("t", "k", at(time.Hour), `{"v":1}`, nil)
	got := e.listAll("t", nil, 10)
	if len(got) != 1 || !got[0].Timestamp.Equal(at(time.Hour)) || string(got[0].Attributes) != `{"v":1}` {
		t.Fatalf("listing after the race = %+v, want k at T0+1h", got)
	}
	if n := testCounter(t, e.reg.metrics.conflicts); n != float64(raced) {
		t.Fatalf("%v conflicts, want %d", n, raced)
	}
}

// testRefusedAfterApplying makes the store apply a guarded item write and
// then report a conflict, as a request retried after a lost response is
// refused by its own first attempt. The put and the delete must see that
// they applied, not start over and unlist their own item.
func testRefusedAfterApplying(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", time.Hour)
	refuseOnce := func(match func([]store.Mutation) bool) {
		done := false
		e.cnt.setHook(func(batch []store.Mutation) error {
			if done || !match(batch) {
				return nil
			}
			done = true
			if err := e.raw.Write(context.Background(), ItemsTable, batch); err != nil {
				return err
			}
			return fmt.Errorf("retried request: %w", store.ErrConflict)
		})
	}
	refuseOnce(func(batch []store.Mutation) bool { return isItemWrite(batch, "k") })
	e.put("t", "k", at(0), `{"v":1}`, nil)
	if n := testCounter(t, e.reg.metrics.conflicts); n != 0 {
		t.Fatalf("%v conflicts counted for a write that applied", n)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing = %q, want [k]", got)
	}
	refuseOnce(func(batch []store.Mutation) bool {
		return len(batch) == 1 && batch[0].Kind == store.DeleteRow && batch[0].Partition[2] == kindItem
	})
	if err := e.reg.Delete(e.ctx, "t", "k"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.get("t", "k"); ok {
		t.Fatal("item still there after delete")
	}
	if got := keys(e.listAll("t", nil, 10)); len(got) != 0 {
		t.Fatalf("listing after delete = %q", got)
	}
	if n := testCounter(t, e.reg.metrics.stale); n != 0 {
		t.Fatalf("%v stale entries met: the delete left its entry behind", n)
	}
}

// testPageTokenAfter refuses a page token resumed under another After.
func testPageTokenAfter(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	for i := range 4 {
		e.put("t", fmt.Sprint(i), at(time.Duration(i)*time.Minute), `{}`, nil)
	}
	after := at(0)
	page, err := e.reg.List(e.ctx, "t", ListQuery{After: &after, Limit: 1})
	if err != nil || page.NextPageToken == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	other := at(-time.Hour)
	for _, q := range []ListQuery{
		{Limit: 1, PageToken: page.NextPageToken},
		{After: &other, Limit: 1, PageToken: page.NextPageToken},
	} {
		if _, err := e.reg.List(e.ctx, "t", q); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("token resumed with after=%v: %v, want ErrInvalid", q.After, err)
		}
	}
	page, err = e.reg.List(e.ctx, "t", ListQuery{After: &after, Limit: 10, PageToken: page.NextPageToken})
	if err != nil || !slices.Equal(keys(page.Items), []string{"2", "3"}) {
		t.Fatalf("resumed with the same after: %q %v", keys(page.Items), err)
	}
}

// testItemsWithoutVersions reads, lists, replaces and deletes items
// written before items carried versions (no version cell, entries at
// version 0), as a store upgraded in place holds them.
func testItemsWithoutVersions(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	rec, err := e.reg.lookup(e.ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	tr := rec.ref("t")
	for i, key := range []string{"a", "b", "c"} {
		ts := at(time.Duration(i) * time.Minute)
		en := entry{ts: ts, key: key, size: itemSize(key, []byte(`{}`))}
		item := withExpiry(store.Mutation{
			Partition: tr.itemPartition(key), Clustering: itemClustering(key),
			Cells: []store.Cell{{Column: colAt, Value: ts}, {Column: colAttrs, Value: []byte(`{}`)}},
		}, 0)
		for _, m := range []store.Mutation{tr.bucketUpsert(tr.bucketRowOf(en)), tr.entryUpsert(en), item} {
			if err := e.raw.Write(e.ctx, ItemsTable, []store.Mutation{m}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("listing = %q", got)
	}
	e.put("t", "a", at(time.Minute/2), `{"v":1}`, nil) // moved
	e.put("t", "b", at(time.Minute), `{"v":1}`, nil)   // same timestamp
	if err := e.reg.Delete(e.ctx, "t", "c"); err != nil {
		t.Fatal(err)
	}
	got := e.listAll("t", nil, 10)
	if !slices.Equal(keys(got), []string{"a", "b"}) || string(got[0].Attributes) != `{"v":1}` || string(got[1].Attributes) != `{"v":1}` {
		t.Fatalf("listing after the writes = %+v", got)
	}
	if n := testCounter(t, e.reg.metrics.stale); n != 0 {
		t.Fatalf("%v stale entries met: an old entry was left behind", n)
	}
}

// testListingSparesPutsInFlight runs a listing between a put's entry write
// and its item write, within the grace: the listing skips the entry and
// leaves the put alone, so the put succeeds at its first attempt.
func testListingSparesPutsInFlight(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", time.Hour)
	e.once(func(batch []store.Mutation) bool { return isItemWrite(batch, "k") }, func() {
		e.clock.Advance(inFlightGrace - time.Millisecond)
		if got := keys(e.listAll("t", nil, 10)); len(got) != 0 {
			t.Errorf("listing during the put = %q, want none", got)
		}
	})
	e.put("t", "k", at(0), `{"v":1}`, nil)
	if n := testCounter(t, e.reg.metrics.conflicts); n != 0 {
		t.Fatalf("%v conflicts: the listing fenced a put in flight", n)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing after the put = %q, want [k]", got)
	}
}

// testLostRaceLeavesNoEntry has another put of the same key land between
// a put's read of the item and its item write: the put loses the race and
// starts over, and the attempt that lost leaves no entry behind (removed
// after the refusal, or, in a guarded batch, never written), so the table
// holds one entry for its one item.
func testLostRaceLeavesNoEntry(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", time.Hour)
	e.put("t", "k", at(0), `{"v":0}`, nil)
	e.once(func(batch []store.Mutation) bool { return isItemWrite(batch, "k") }, func() {
		e.put("t", "k", at(0), `{"v":1}`, nil)
	})
	e.put("t", "k", at(0), `{"v":2}`, nil)
	if n := testCounter(t, e.reg.metrics.conflicts); n != 1 {
		t.Fatalf("%v conflicts, want 1 (the attempt that lost)", n)
	}
	rec, err := e.reg.lookup(e.ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	tr := rec.ref("t")
	page, err := kit.Query(e.ctx, e.raw, ItemsTable, store.Query{Partition: tr.entryPartition(tr.bucketOf(at(0).UnixMilli())), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	item, err := e.reg.readItem(e.ctx, tr, "k")
	if err != nil || !item.ok || string(item.item.Attributes) != `{"v":2}` {
		t.Fatalf("item = %+v, %v", item, err)
	}
	if len(page.Rows) != 1 || page.Rows[0].Clustering[2] != item.ver {
		t.Fatalf("entries = %v, want the one of version %d", page.Rows, item.ver)
	}
}

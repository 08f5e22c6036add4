package expiry

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// TestIdlePassReadsOnlyMarkers: a pass with nothing due reads the first
// page of due markers and nothing else; a marked window is swept once,
// its marker removed once the window is finished, and the index is idle
// again afterwards.
func TestIdlePassReadsOnlyMarkers(t *testing.T) {
	e := newEnv(t, testbackend.Pebble, Options{})
	pass := func(at time.Time) opsSnapshot {
		t.Helper()
		e.clock.Set(at)
		before := e.cnt.snapshot()
		e.sweep()
		return e.cnt.snapshot().sub(before)
	}
	if ops := pass(at(time.Second)); ops.queries != 1 || ops.writes != 0 || ops.gets != 0 {
		t.Fatalf("a pass over an empty index cost %s, want one read", ops)
	}
	if next := e.st.Sweeper().Next(); next != e.st.opts.IdleInterval {
		t.Fatalf("Next on an empty index %s, want the idle interval %s", next, e.st.opts.IdleInterval)
	}
	e.write("items", item("a", 1, at(5*time.Second)))
	if next := e.st.Sweeper().Next(); next <= 0 || next > 4*time.Second {
		t.Fatalf("Next after a write due at +5 s, read at +1 s: %s, want the start of its window", next)
	}
	if ops := pass(at(2 * time.Second)); ops.queries != 1 || ops.writes != 0 {
		t.Fatalf("a pass before anything is due cost %s, want one read", ops)
	}
	ops := pass(at(7 * time.Second))
	if want := int64(1 + e.st.opts.Shards); ops.queries != want {
		t.Fatalf("the pass that swept a marked window cost %s, want %d reads (markers, then the window's shards)", ops, want)
	}
	if got := e.countPresent("items", "a"); got != 0 {
		t.Fatalf("%d rows left after the window was swept", got)
	}
	if ops := pass(at(8 * time.Second)); ops.queries != 1 || ops.writes != 0 {
		t.Fatalf("a pass after the window was swept cost %s, want one read", ops)
	}
}

// TestWriteThroughAnotherReplica: a row written through another process's
// decorator over the same backend wakes nobody here, but its marker is in
// the store, so the next pass (at most IdleInterval later) sweeps it.
func TestWriteThroughAnotherReplica(t *testing.T) {
	e := newEnv(t, testbackend.Pebble, Options{})
	other, err := Wrap(e.ctx, e.raw, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Set(at(time.Second))
	e.sweep()
	if err := other.Write(e.ctx, "items", []store.Mutation{item("a", 1, at(3*time.Second))}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.st.Sweeper().Wake():
		t.Fatal("a write through another process woke this sweeper")
	default:
	}
	if next := e.st.Sweeper().Next(); next != e.st.opts.IdleInterval {
		t.Fatalf("Next %s, want the idle interval %s: this process knows of nothing due", next, e.st.opts.IdleInterval)
	}
	e.clock.Set(at(time.Second + e.st.opts.IdleInterval))
	if res := e.sweep(); res.Deleted != 1 {
		t.Fatalf("the re-check pass deleted %d rows, want the other replica's one", res.Deleted)
	}
}

// TestIndexWithoutMarkersWalksEveryWindow: an index whose state was made
// before due markers existed has entries no marker names, so its sweeper
// keeps walking every window from its durable watermark, and its writers
// write no markers.
func TestIndexWithoutMarkersWalksEveryWindow(t *testing.T) {
	clock := at(0)
	raw := testbackend.Pebble(t, func() time.Time { return clock })
	meta := store.Meta{S: raw}
	if err := meta.Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]int64{"window_ms": 1000, "shards": 16, "watermark_ms": windowStart(at(0))})
	if err := meta.Put(t.Context(), metaKind, metaKey, doc); err != nil {
		t.Fatal(err)
	}
	cnt := newCounting(raw)
	st, err := Wrap(t.Context(), cnt, Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTable(t.Context(), itemsSpec); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(t.Context(), "items", []store.Mutation{item("a", 1, at(2*time.Second))}); err != nil {
		t.Fatal(err)
	}
	if got := entriesStored(t, raw); got != stats(t, raw, IndexTable) {
		t.Fatalf("an index without markers holds %d markers", stats(t, raw, IndexTable)-got)
	}
	clock = at(4 * time.Second)
	before := cnt.snapshot()
	res, err := st.Sweeper().SweepOnce(t.Context(), clock)
	if err != nil {
		t.Fatal(err)
	}
	ops := cnt.snapshot().sub(before)
	if res.Deleted != 1 || res.Windows != 4 || ops.queries != 5*16 {
		t.Fatalf("pass %+v costing %s; want the row deleted, 4 windows completed and 5 windows' shards read", res, ops)
	}
	if next := st.Sweeper().Next(); next != st.opts.SweepInterval {
		t.Fatalf("Next %s, want the sweep interval %s", next, st.opts.SweepInterval)
	}
}

func windowStart(t time.Time) int64 { return t.UnixMilli() / 1000 * 1000 }

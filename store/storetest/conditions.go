package storetest

import (
	"errors"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Conditional writes (Mutation.If) are what leases, fencing and
// read-modify-write configuration updates are built on, so every backend
// must evaluate them against live content only and atomically with other
// writers.
var conditionCases = []testCase{
	{"IfAbsent", testIfAbsent},
	{"IfExists", testIfExists},
	{"IfEquals", testIfEquals},
	{"ExpiredCountsAsAbsent", testConditionExpired},
	{"ConditionalDeletes", testConditionalDeletes},
	{"ConditionRefusals", testConditionRefusals},
	{"CompareAndSwapRace", testCompareAndSwapRace},
	{"GuardedBatch", testGuardedBatch},
}

func cond(m store.Mutation, c store.Condition) store.Mutation {
	m.If = &c
	return m
}

// conflict writes m and checks that it is refused with ErrConflict.
func (e *env) conflict(table string, m store.Mutation) {
	e.t.Helper()
	err := e.s.Write(e.ctx, table, []store.Mutation{m})
	if !isErr(err, store.ErrConflict) {
		e.t.Fatalf("conditional Write %s: got %v, want ErrConflict", table, err)
	}
}

func testIfAbsent(e *env) {
	spec := e.create("ifabsent", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	absent := store.Condition{Kind: store.IfAbsent}
	e.write(spec.Name, cond(up("p", 1, "a", cell("v", "first"), cell("n", int64(1))), absent))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "first", int64(1), nil, nil)
	// The row exists now: the same write is refused and changes nothing.
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("v", "second")), absent))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "first", int64(1), nil, nil)
	e.checkIndex(spec, "by_v", p, "first", k)
	e.checkIndex(spec, "by_v", p, "second")
	// A deleted row is absent again.
	e.write(spec.Name, store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: k})
	e.write(spec.Name, cond(up("p", 1, "a", cell("v", "third")), absent))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "third", nil, nil, nil)
}

func testIfExists(e *env) {
	spec := e.create("ifexists", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	exists := store.Condition{Kind: store.IfExists}
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("v", "x")), exists))
	e.mustMiss(spec.Name, p, k)
	e.write(spec.Name, up("p", 1, "a", cell("n", int64(7))))
	e.write(spec.Name, cond(up("p", 1, "a", cell("v", "x")), exists))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "x", int64(7), nil, nil)
}

func testIfEquals(e *env) {
	spec := e.create("ifequals", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	e.write(spec.Name, up("p", 1, "a", cell("v", "holder-a"), cell("n", int64(1)), cell("b", []byte{1, 2}), cell("ts", ts1)))
	eq := func(col string, v any) store.Condition {
		return store.Condition{Kind: store.IfEquals, Column: col, Value: v}
	}
	// Every column type compares by value.
	e.write(spec.Name, cond(up("p", 1, "a", cell("n", int64(2))), eq("n", int64(1))))
	e.write(spec.Name, cond(up("p", 1, "a", cell("v", "holder-b")), eq("b", []byte{1, 2})))
	e.write(spec.Name, cond(up("p", 1, "a", cell("b", []byte{3})), eq("ts", ts1)))
	e.write(spec.Name, cond(up("p", 1, "a", cell("ts", ts2)), eq("v", "holder-b")))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "holder-b", int64(2), []byte{3}, ts2)
	// A stale compare-and-swap is refused and leaves the row as it was.
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("n", int64(3))), eq("n", int64(1))))
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("n", int64(3))), eq("v", "holder-a")))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "holder-b", int64(2), []byte{3}, ts2)
	// A missing row and a missing cell equal nothing.
	e.conflict(spec.Name, cond(up("p", 9, "z", cell("n", int64(1))), eq("n", int64(0))))
	e.mustMiss(spec.Name, p, key(9, "z"))
	e.write(spec.Name, store.Mutation{Kind: store.DeleteCells, Partition: p, Clustering: k, Cells: []store.Cell{{Column: "v"}}})
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("n", int64(3))), eq("v", "holder-b")))
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("n", int64(3))), eq("v", "")))
}

// testConditionExpired checks that conditions see what reads see: a row or
// cell past its expiry is absent, to the millisecond, even while it is
// still on disk.
func testConditionExpired(e *env) {
	spec := e.create("condexp", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	exp := e.clk.Now().Add(10 * time.Second)
	m := up("p", 1, "a", cell("v", "lease"), store.Cell{Column: "n", Value: int64(5), ExpiresAt: exp.Add(-5 * time.Second)})
	m.ExpiresAt = exp
	e.write(spec.Name, m)
	// Before the cell's expiry, n equals 5; after it, n equals nothing
	// although the row is live.
	e.write(spec.Name, cond(up("p", 1, "a"), store.Condition{Kind: store.IfEquals, Column: "n", Value: int64(5)}))
	e.clk.Advance(5 * time.Second)
	e.conflict(spec.Name, cond(up("p", 1, "a"), store.Condition{Kind: store.IfEquals, Column: "n", Value: int64(5)}))
	e.conflict(spec.Name, cond(up("p", 1, "a"), store.Condition{Kind: store.IfAbsent}))
	// The conditional upserts above wrote the row marker with the table
	// default (none here), so the row no longer expires: write it again
	// with its expiry.
	m2 := up("p", 1, "a", cell("v", "lease"))
	m2.ExpiresAt = e.clk.Now().Add(time.Second)
	e.write(spec.Name, store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: k})
	e.write(spec.Name, m2)
	e.clk.Advance(999 * time.Millisecond)
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("v", "next")), store.Condition{Kind: store.IfAbsent}))
	e.clk.Advance(time.Millisecond)
	// expiry == now: gone, so absent, and equal to nothing.
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("v", "next")), store.Condition{Kind: store.IfExists}))
	e.conflict(spec.Name, cond(up("p", 1, "a", cell("v", "next")), store.Condition{Kind: store.IfEquals, Column: "v", Value: "lease"}))
	e.write(spec.Name, cond(up("p", 1, "a", cell("v", "next")), store.Condition{Kind: store.IfAbsent}))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "next", nil, nil, nil)
}

func testConditionalDeletes(e *env) {
	spec := e.create("conddel", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	e.write(spec.Name, up("p", 1, "a", cell("v", "a"), cell("n", int64(1))))
	del := store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: k}
	e.conflict(spec.Name, cond(del, store.Condition{Kind: store.IfEquals, Column: "n", Value: int64(2)}))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "a", int64(1), nil, nil)
	delCells := store.Mutation{Kind: store.DeleteCells, Partition: p, Clustering: k, Cells: []store.Cell{{Column: "v"}}}
	e.write(spec.Name, cond(delCells, store.Condition{Kind: store.IfEquals, Column: "v", Value: "a"}))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, nil, int64(1), nil, nil)
	e.checkIndex(spec, "by_v", p, "a")
	e.write(spec.Name, cond(del, store.Condition{Kind: store.IfEquals, Column: "n", Value: int64(1)}))
	e.mustMiss(spec.Name, p, k)
	e.conflict(spec.Name, cond(del, store.Condition{Kind: store.IfExists}))
}

// testConditionRefusals checks that malformed conditions are refused as
// invalid, not as conflicts, and write nothing.
func testConditionRefusals(e *env) {
	spec := e.create("condbad", wideSpec(store.Asc, 0))
	p := []any{"p"}
	bad := []struct {
		name  string
		batch []store.Mutation
	}{
		{"two conditions", []store.Mutation{cond(up("p", 1, "a"), store.Condition{Kind: store.IfAbsent}), cond(up("p", 2, "b"), store.Condition{Kind: store.IfAbsent})}},
		{"unknown column", []store.Mutation{cond(up("p", 1, "a"), store.Condition{Kind: store.IfEquals, Column: "nope", Value: "x"})}},
		{"wrong type", []store.Mutation{cond(up("p", 1, "a"), store.Condition{Kind: store.IfEquals, Column: "n", Value: "x"})}},
		{"unknown kind", []store.Mutation{cond(up("p", 1, "a"), store.Condition{Kind: 99})}},
		{"column on IfAbsent", []store.Mutation{cond(up("p", 1, "a"), store.Condition{Kind: store.IfAbsent, Column: "v"})}},
		{"DeleteIfExpired", []store.Mutation{cond(store.Mutation{Kind: store.DeleteIfExpired, Partition: p, Clustering: key(1, "a")}, store.Condition{Kind: store.IfExists})}},
	}
	if !e.caps.GuardedBatch {
		bad = append(bad, struct {
			name  string
			batch []store.Mutation
		}{"two mutations", []store.Mutation{cond(up("p", 1, "a", cell("v", "x")), store.Condition{Kind: store.IfAbsent}), up("p", 2, "b")}})
	}
	for _, b := range bad {
		err := e.s.Write(e.ctx, spec.Name, b.batch)
		var me *store.MutationError
		if !isErr(err, store.ErrInvalid) || !errors.As(err, &me) {
			e.t.Errorf("%s: got %v, want a *MutationError wrapping ErrInvalid", b.name, err)
		}
	}
	if rows := e.all(spec.Name, "p"); len(rows) != 0 {
		e.t.Fatalf("refused conditional writes left %d rows", len(rows))
	}
}

// testCompareAndSwapRace has writers race to increment one counter by
// compare-and-swap: every increment that was acknowledged must be in the
// final value, which is what a lease epoch relies on.
func testCompareAndSwapRace(e *env) {
	spec := e.create("cas", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	e.write(spec.Name, up("p", 1, "a", cell("n", int64(0))))
	const writers, tries = 4, 12
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int64
		errs []error
	)
	for range writers {
		wg.Go(func() {
			for range tries {
				row, err := e.s.Get(e.ctx, spec.Name, p, k)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				n := row.Values[colN].(int64)
				err = e.s.Write(e.ctx, spec.Name, []store.Mutation{cond(up("p", 1, "a", cell("n", n+1)),
					store.Condition{Kind: store.IfEquals, Column: "n", Value: n})})
				mu.Lock()
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, store.ErrConflict):
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		e.t.Fatalf("compare-and-swap: %v", errs[0])
	}
	got := e.mustGet(spec.Name, p, k).Values[colN].(int64)
	if got != wins || wins == 0 {
		e.t.Fatalf("counter is %d after %d acknowledged increments", got, wins)
	}
}

// testGuardedBatch checks a conditional mutation among unconditional ones
// (store.Capabilities.GuardedBatch): the batch is applied whole when the
// condition holds, evaluated after the batch's earlier mutations, and not
// at all when it does not. Backends without it refuse such a batch
// (testConditionRefusals).
func testGuardedBatch(e *env) {
	if !e.caps.GuardedBatch {
		return
	}
	spec := e.create("guarded", wideSpec(store.Asc, 0))
	absent := store.Condition{Kind: store.IfAbsent}
	// Other partitions before and after the conditional row.
	e.write(spec.Name, up("p", 1, "a", cell("v", "before")), cond(up("q", 1, "a", cell("v", "guarded")), absent), up("r", 1, "a", cell("v", "after")))
	for _, p := range []string{"p", "q", "r"} {
		e.mustGet(spec.Name, []any{p}, key(1, "a"))
	}
	// The condition fails: nothing of the batch is written, and the error
	// names the conditional mutation.
	err := e.s.Write(e.ctx, spec.Name, []store.Mutation{
		up("p", 2, "b", cell("v", "lost")),
		cond(up("q", 1, "a", cell("v", "lost")), absent),
		up("r", 2, "b", cell("v", "lost")),
	})
	var me *store.MutationError
	if !isErr(err, store.ErrConflict) || !errors.As(err, &me) || me.Index != 1 {
		e.t.Fatalf("refused guarded batch: got %v, want a *MutationError at 1 wrapping ErrConflict", err)
	}
	e.mustMiss(spec.Name, []any{"p"}, key(2, "b"))
	e.mustMiss(spec.Name, []any{"r"}, key(2, "b"))
	e.checkRow(e.mustGet(spec.Name, []any{"q"}, key(1, "a")), []any{"q"}, key(1, "a"), "guarded", nil, nil, nil)
	e.checkIndex(spec, "by_v", []any{"p"}, "before", key(1, "a"))
	e.checkIndex(spec, "by_v", []any{"p"}, "lost")
	// The condition sees the batch's own earlier write of its row.
	e.write(spec.Name, up("s", 1, "a", cell("n", int64(1))), cond(up("s", 1, "a", cell("v", "seen")), store.Condition{Kind: store.IfEquals, Column: "n", Value: int64(1)}))
	e.checkRow(e.mustGet(spec.Name, []any{"s"}, key(1, "a")), []any{"s"}, key(1, "a"), "seen", int64(1), nil, nil)
}

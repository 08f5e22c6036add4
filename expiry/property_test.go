package expiry

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// modelRow is what the reference model knows of a row: expiries in Unix ms,
// 0 for none.
type modelRow struct {
	marker int64
	cells  map[string]modelCell
}

type modelCell struct {
	value string
	exp   int64
}

func liveAt(exp, now int64) bool { return exp == 0 || exp > now }

func (r *modelRow) live(now int64) bool {
	if liveAt(r.marker, now) {
		return true
	}
	for _, c := range r.cells {
		if liveAt(c.exp, now) {
			return true
		}
	}
	return false
}

// TestPropertyNeverDeletesLiveRows drives random upserts (row, cell and
// default expiries, NoExpiry), cell and row deletes, clock moves and passes
// against a reference model on the embedded backend, and checks after
// every pass that
//   - every row the model says is live reads back with the model's values;
//   - no index entry due at or before now is left;
//   - every row still stored is live or has an entry still to come;
//
// and at the end, once every expiry has passed, that only rows that never
// expire are left.
func TestPropertyNeverDeletesLiveRows(t *testing.T) {
	t.Parallel()
	cols := []string{"v", "w"}
	rapid.Check(t, func(rt *rapid.T) {
		ttlSpec := itemsSpec
		ttlSpec.DefaultTTL = 300 * time.Millisecond
		e := newEnv(t, testbackend.Pebble, Options{Grace: 50 * time.Millisecond, Window: 100 * time.Millisecond, Shards: 2})
		defer e.st.Close()
		if err := e.st.DropTable(e.ctx, "items"); err != nil {
			rt.Fatal(err)
		}
		if err := e.st.CreateTable(e.ctx, ttlSpec); err != nil {
			rt.Fatal(err)
		}
		model := map[int64]*modelRow{}
		nowMs := func() int64 { return e.clock.Now().UnixMilli() }
		expiry := func(label string) (time.Time, int64) {
			if !rapid.Bool().Draw(rt, label+"_has") {
				return time.Time{}, 0
			}
			ms := nowMs() + rapid.Int64Range(-50, 600).Draw(rt, label+"_in")
			return time.UnixMilli(ms), ms
		}

		check := func(step int) {
			now := nowMs()
			for k, r := range model {
				if !r.live(now) {
					continue
				}
				row, err := e.st.Get(e.ctx, "items", []any{"a"}, []any{k})
				if err != nil {
					rt.Fatalf("step %d: live row %d lost: %v", step, k, err)
				}
				for i, col := range cols {
					c, ok := r.cells[col]
					want := any(nil)
					if ok && liveAt(c.exp, now) {
						want = c.value
					}
					got := row.Values[i]
					if b, ok := got.([]byte); ok {
						got = string(b)
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						rt.Fatalf("step %d: row %d column %s = %v, want %v", step, k, col, got, want)
					}
				}
			}
			pending := map[string]bool{}
			// Nothing is due more than 600 ms (an expiry) or Grace ahead.
			for _, en := range e.indexEntries(start, e.clock.Now().Add(time.Second)) {
				if en.due <= now {
					rt.Fatalf("step %d: entry due at %d left after a pass at %d", step, en.due, now)
				}
				pending[string(en.id)] = true
			}
			for _, k := range e.present("items", "a")["a"] {
				r, ok := model[k]
				pk, ck := kit.EncodeTuple(nil, []any{"a"}, false), kit.EncodeTuple(nil, []any{k}, false)
				if (!ok || !r.live(now)) && !pending[string(rowID("items", pk, ck))] {
					rt.Fatalf("step %d: dead row %d stored with no entry to come", step, k)
				}
			}
		}

		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for step := range steps {
			k := rapid.Int64Range(0, 5).Draw(rt, "key")
			switch op := rapid.IntRange(0, 5).Draw(rt, "op"); op {
			case 0, 1: // upsert
				m := store.Mutation{Partition: []any{"a"}, Clustering: []any{k}}
				var markerExp int64
				switch rapid.IntRange(0, 2).Draw(rt, "row_expiry") {
				case 0: // the table default
					markerExp = nowMs() + ttlSpec.DefaultTTL.Milliseconds()
				case 1:
					m.NoExpiry = true
				case 2:
					if m.ExpiresAt, markerExp = expiry("row"); markerExp == 0 {
						m.NoExpiry = true
					}
				}
				r := model[k]
				if r == nil {
					r = &modelRow{cells: map[string]modelCell{}}
					model[k] = r
				}
				r.marker = markerExp
				for _, col := range rapid.SliceOfNDistinct(rapid.SampledFrom(cols), 1, 2, rapid.ID[string]).Draw(rt, "cols") {
					val := fmt.Sprintf("%s%d", col, step)
					var v any = val // w is text
					if col == "v" {
						v = []byte(val)
					}
					cexp, cms := expiry("cell")
					m.Cells = append(m.Cells, store.Cell{Column: col, Value: v, ExpiresAt: cexp})
					if cms == 0 {
						cms = markerExp
					}
					r.cells[col] = modelCell{value: val, exp: cms}
				}
				if err := e.st.Write(e.ctx, "items", []store.Mutation{m}); err != nil {
					rt.Fatal(err)
				}
			case 2: // delete a row or one of its cells
				col := rapid.SampledFrom(cols).Draw(rt, "col")
				m := store.Mutation{Kind: store.DeleteCells, Partition: []any{"a"}, Clustering: []any{k},
					Cells: []store.Cell{{Column: col}}}
				if rapid.Bool().Draw(rt, "whole_row") {
					m = store.Mutation{Kind: store.DeleteRow, Partition: []any{"a"}, Clustering: []any{k}}
					delete(model, k)
				} else if r := model[k]; r != nil {
					delete(r.cells, col)
				}
				if err := e.st.Write(e.ctx, "items", []store.Mutation{m}); err != nil {
					rt.Fatal(err)
				}
			case 3, 4: // time passes
				e.clock.Advance(time.Duration(rapid.IntRange(0, 400).Draw(rt, "advance_ms")) * time.Millisecond)
			case 5:
				if _, err := e.st.Sweeper().SweepOnce(e.ctx, e.clock.Now()); err != nil {
					rt.Fatal(err)
				}
				check(step)
			}
		}
		e.clock.Advance(2 * time.Second)
		if _, err := e.st.Sweeper().SweepOnce(e.ctx, e.clock.Now()); err != nil {
			rt.Fatal(err)
		}
		check(steps)
		for _, k := range e.present("items", "a")["a"] {
			if r, ok := model[k]; !ok || !r.live(e.clock.Now().UnixMilli()) {
				rt.Fatalf("row %d still stored after every expiry passed", k)
			}
		}
	})
}

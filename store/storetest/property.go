package storetest

import (
	"fmt"
	"math"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"pgregory.net/rapid"
)

var propertyCases = []testCase{
	{"AgainstModel", testAgainstModel},
}

// Small domains make random operations collide on the same rows, cells and
// index values; the key values include the int64 extremes and strings that
// are prefixes of each other.
var (
	propC1    = []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
	propC2    = []string{"", "a", "a\x00", "b"}
	propV     = []string{"red", "blue", "", "x\x00"}
	propN     = []int64{0, -5, math.MaxInt64}
	propB     = [][]byte{{}, {0}, {0xff, 0}}
	propTS    = []time.Time{ts1, ts2, time.UnixMilli(0)}
	propExp   = []int64{-1000, 0, 1, 500, 1000, 3000, 10000} // ms from now
	propLimit = []int{1, 2, 3, 5, store.MaxLimit}
	propSteps = []time.Duration{time.Millisecond, 499 * time.Millisecond, time.Second, 3 * time.Second, 6 * time.Second}
)

// testAgainstModel runs random sequences of upserts, deletes, partition
// deletes and clock moves against the Store and the model, and compares
// Get, Query (both directions, random bounds, random limits with paging)
// and QueryIndex. Each sequence works in fresh partitions of two shared
// tables (one ascending without TTL, one descending with a default TTL),
// so that the number of tables created stays at two however many
// sequences rapid runs.
func testAgainstModel(e *env) {
	specs := []store.TableSpec{
		e.create("model_asc", wideSpec(store.Asc, 0)),
		e.create("model_desc_ttl", wideSpec(store.Desc, 5*time.Second)),
	}
	seq := 0
	rapid.Check(e.t, func(rt *rapid.T) {
		seq++
		spec := specs[rapid.IntRange(0, 1).Draw(rt, "table")]
		pt := &propTest{e: e, rt: rt, spec: spec, m: newModel(spec),
			parts: []string{fmt.Sprintf("s%d_a", seq), fmt.Sprintf("s%d_b", seq)}}
		steps := rapid.IntRange(1, 20).Draw(rt, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 19).Draw(rt, "op"); {
			case op < 10:
				pt.write()
			case op < 11:
				pt.deletePartition()
			case op < 15:
				pt.advance()
			default:
				pt.check()
			}
		}
		pt.checkAll()
	})
}

type propTest struct {
	e     *env
	rt    *rapid.T
	spec  store.TableSpec
	m     *model
	parts []string
}

func (pt *propTest) now() int64 { return pt.e.clk.Now().UnixMilli() }

func (pt *propTest) drawKey() (string, []any) {
	p := rapid.SampledFrom(pt.parts).Draw(pt.rt, "partition")
	return p, key(rapid.SampledFrom(propC1).Draw(pt.rt, "c1"), rapid.SampledFrom(propC2).Draw(pt.rt, "c2"))
}

func (pt *propTest) drawExpiry(label string) time.Time {
	return time.UnixMilli(pt.now() + rapid.SampledFrom(propExp).Draw(pt.rt, label))
}

func (pt *propTest) drawValue(col int) any {
	switch col {
	case colV:
		return rapid.SampledFrom(propV).Draw(pt.rt, "v")
	case colN:
		return rapid.SampledFrom(propN).Draw(pt.rt, "n")
	case colB:
		return rapid.SampledFrom(propB).Draw(pt.rt, "b")
	}
	return rapid.SampledFrom(propTS).Draw(pt.rt, "ts")
}

func (pt *propTest) drawMutation() store.Mutation {
	p, k := pt.drawKey()
	m := store.Mutation{Partition: []any{p}, Clustering: k}
	switch kind := rapid.IntRange(0, 9).Draw(pt.rt, "kind"); {
	case kind < 6:
		m.Kind = store.Upsert
		switch rapid.IntRange(0, 2).Draw(pt.rt, "row expiry") {
		case 1:
			m.NoExpiry = true
		case 2:
			m.ExpiresAt = pt.drawExpiry("row exp")
		}
		for col, name := range wideValueNames {
			if !rapid.Bool().Draw(pt.rt, "set "+name) {
				continue
			}
			c := store.Cell{Column: name, Value: pt.drawValue(col)}
			if rapid.IntRange(0, 3).Draw(pt.rt, "cell expiry") == 0 {
				c.ExpiresAt = pt.drawExpiry("cell exp")
			}
			m.Cells = append(m.Cells, c)
		}
	case kind < 7:
		m.Kind = store.DeleteRow
	case kind < 8:
		m.Kind = store.DeleteCells
		for _, name := range wideValueNames {
			if rapid.Bool().Draw(pt.rt, "delete "+name) {
				m.Cells = append(m.Cells, store.Cell{Column: name})
			}
		}
		if len(m.Cells) == 0 {
			m.Cells = []store.Cell{{Column: "v"}}
		}
	default:
		m.Kind = store.DeleteIfExpired
	}
	return m
}

func (pt *propTest) write() {
	batch := make([]store.Mutation, rapid.IntRange(1, 3).Draw(pt.rt, "batch"))
	for i := range batch {
		batch[i] = pt.drawMutation()
	}
	if err := pt.e.s.Write(pt.e.ctx, pt.spec.Name, batch); err != nil {
		pt.rt.Fatalf("Write %v: %v", batch, err)
	}
	now := pt.now()
	for _, m := range batch {
		pt.m.apply(m, now)
	}
}

func (pt *propTest) deletePartition() {
	p := rapid.SampledFrom(pt.parts).Draw(pt.rt, "partition")
	if err := pt.e.s.DeletePartition(pt.e.ctx, pt.spec.Name, []any{p}); err != nil {
		pt.rt.Fatalf("DeletePartition: %v", err)
	}
	pt.m.deletePartition(p)
}

// advance moves the clock forward, often onto an expiry or just before it,
// where off-by-one mistakes show.
func (pt *propTest) advance() {
	now := pt.now()
	if exps := pt.m.expiries(); len(exps) > 0 && rapid.Bool().Draw(pt.rt, "to boundary") {
		to := rapid.SampledFrom(exps).Draw(pt.rt, "boundary") - rapid.Int64Range(0, 1).Draw(pt.rt, "minus")
		if to > now {
			pt.e.clk.Set(time.UnixMilli(to).UTC())
		}
		return
	}
	pt.e.clk.Advance(rapid.SampledFrom(propSteps).Draw(pt.rt, "step"))
}

func (pt *propTest) drawBound(label string) store.Bound {
	switch rapid.IntRange(0, 2).Draw(pt.rt, label) {
	case 0:
		return store.Bound{}
	case 1:
		return store.Bound{Values: []any{rapid.SampledFrom(propC1).Draw(pt.rt, label+" c1")}, Inclusive: rapid.Bool().Draw(pt.rt, label+" incl")}
	}
	_, k := pt.drawKey()
	return store.Bound{Values: k, Inclusive: rapid.Bool().Draw(pt.rt, label+" incl")}
}

// check compares one random read of each kind.
func (pt *propTest) check() {
	p := rapid.SampledFrom(pt.parts).Draw(pt.rt, "partition")
	lo, hi := pt.drawBound("low"), pt.drawBound("high")
	if lo.Values != nil && hi.Values != nil && compareNatural(lo.Values, hi.Values) > 0 {
		lo, hi = hi, lo
	}
	pt.checkQuery(p, lo, hi, rapid.Bool().Draw(pt.rt, "reverse"), rapid.SampledFrom(propLimit).Draw(pt.rt, "limit"))

	gp, k := pt.drawKey()
	want, ok := pt.m.get(gp, k, pt.now())
	got, err := pt.e.s.Get(pt.e.ctx, pt.spec.Name, []any{gp}, k)
	switch {
	case !ok && !isErr(err, store.ErrNotFound):
		pt.rt.Fatalf("Get %s %s = %s, %v; the model has no live row", gp, fmtTuple(k), fmtRow(got), err)
	case ok && err != nil:
		pt.rt.Fatalf("Get %s %s: %v; the model has %s", gp, fmtTuple(k), err, fmtRow(want))
	case ok:
		pt.compareRows("Get", []store.Row{got}, []store.Row{want})
	}

	if rapid.Bool().Draw(pt.rt, "index on v") {
		pt.checkIndex(p, "by_v", colV, rapid.SampledFrom(propV).Draw(pt.rt, "index v"))
	} else {
		pt.checkIndex(p, "by_b", colB, rapid.SampledFrom(propB).Draw(pt.rt, "index b"))
	}
}

// checkAll compares every partition in both directions and every index
// value.
func (pt *propTest) checkAll() {
	for _, p := range pt.parts {
		pt.checkQuery(p, store.Bound{}, store.Bound{}, false, 3)
		pt.checkQuery(p, store.Bound{}, store.Bound{}, true, store.MaxLimit)
		for _, v := range propV {
			pt.checkIndex(p, "by_v", colV, v)
		}
		for _, b := range propB {
			pt.checkIndex(p, "by_b", colB, b)
		}
	}
}

func (pt *propTest) checkQuery(p string, lo, hi store.Bound, reverse bool, limit int) {
	now := pt.now()
	want := pt.m.query(p, lo, hi, reverse, now)
	q := store.Query{Partition: []any{p}, Low: lo, High: hi, Reverse: reverse, Limit: limit}
	what := fmt.Sprintf("Query %s low=%s high=%s reverse=%v limit=%d at %d", p, fmtBound(lo), fmtBound(hi), reverse, limit, now)
	var got []store.Row
	for pages := 0; ; pages++ {
		page, err := kit.Query(pt.e.ctx, pt.e.s, pt.spec.Name, q)
		if err != nil {
			pt.rt.Fatalf("%s page %d: %v", what, pages, err)
		}
		got = append(got, page.Rows...)
		// A token exactly when a live row follows the page.
		if rest := len(want) - len(got); (page.NextPageToken != nil) != (rest > 0) || (rest > 0 && len(page.Rows) != limit) {
			pt.compareRows(what, got, want[:min(len(got), len(want))])
			pt.rt.Fatalf("%s page %d: %d rows, token %x, with %d live rows following", what, pages, len(page.Rows), page.NextPageToken, max(rest, 0))
		}
		if page.NextPageToken == nil {
			break
		}
		q.PageToken = page.NextPageToken
	}
	pt.compareRows(what, got, want)
}

func (pt *propTest) checkIndex(p, index string, col int, v any) {
	now := pt.now()
	want := pt.m.index(p, col, v, now)
	got, err := pt.e.s.QueryIndex(pt.e.ctx, pt.spec.Name, index, []any{p}, v)
	if err != nil {
		pt.rt.Fatalf("QueryIndex %s %s=%s: %v", p, index, fmtValue(v), err)
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = tupleEqual(want[i], got[i])
	}
	if !ok {
		pt.rt.Fatalf("QueryIndex %s %s=%s at %d: got %v, want %v", p, index, fmtValue(v), now, fmtKeyList(got), fmtKeyList(want))
	}
}

func (pt *propTest) compareRows(what string, got, want []store.Row) {
	if len(got) != len(want) {
		pt.rt.Fatalf("%s: %d rows, want %d\n got: %v\nwant: %v", what, len(got), len(want), fmtRows(got), fmtRows(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !tupleEqual(w.Partition, g.Partition) || !tupleEqual(w.Clustering, g.Clustering) ||
			!tupleEqual(w.Values, g.Values) || !g.ExpiresAt.Equal(w.ExpiresAt) {
			pt.rt.Fatalf("%s: row %d is %s, want %s\n got: %v\nwant: %v", what, i, fmtRow(g), fmtRow(w), fmtRows(got), fmtRows(want))
		}
	}
}

func fmtRows(rows []store.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmtRow(r)
	}
	return out
}

func fmtKeyList(keys [][]any) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmtTuple(k)
	}
	return out
}

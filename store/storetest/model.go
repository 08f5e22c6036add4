package storetest

import (
	"slices"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// model is the reference the property test compares a Store with: the
// contract's semantics for one wideSpec table, written as plainly as
// possible. Times are Unix milliseconds; an expiry of 0 means none.
type model struct {
	order store.Order
	ttl   int64
	parts map[string]map[string]*modelRow
}

type modelRow struct {
	key       []any
	markerExp int64
	cells     [4]*modelCell // by wideSpec value column
}

type modelCell struct {
	val any
	exp int64
}

func newModel(spec store.TableSpec) *model {
	return &model{order: spec.ClusteringOrder, ttl: spec.DefaultTTL.Milliseconds(), parts: map[string]map[string]*modelRow{}}
}

func liveAt(exp, now int64) bool { return exp == 0 || exp > now }

func (r *modelRow) live(now int64) bool {
	if liveAt(r.markerExp, now) {
		return true
	}
	for _, c := range r.cells {
		if c != nil && liveAt(c.exp, now) {
			return true
		}
	}
	return false
}

func (r *modelRow) read(partition string, now int64) store.Row {
	row := store.Row{Partition: []any{partition}, Clustering: r.key, Values: make([]any, len(r.cells))}
	for i, c := range r.cells {
		if c != nil && liveAt(c.exp, now) {
			row.Values[i] = c.val
		}
	}
	if r.markerExp != 0 {
		row.ExpiresAt = time.UnixMilli(r.markerExp).UTC()
	}
	return row
}

// apply applies one valid mutation at time now.
func (m *model) apply(mu store.Mutation, now int64) {
	p := mu.Partition[0].(string)
	k := fmtTuple(mu.Clustering)
	rows := m.parts[p]
	if rows == nil {
		rows = map[string]*modelRow{}
		m.parts[p] = rows
	}
	row := rows[k]
	switch mu.Kind {
	case store.Upsert:
		exp := int64(0)
		switch {
		case !mu.ExpiresAt.IsZero():
			exp = mu.ExpiresAt.UnixMilli()
		case mu.NoExpiry:
		case m.ttl > 0:
			exp = now + m.ttl
		}
		if row == nil {
			row = &modelRow{key: mu.Clustering}
			rows[k] = row
		}
		row.markerExp = exp
		for _, c := range mu.Cells {
			cexp := exp
			if !c.ExpiresAt.IsZero() {
				cexp = c.ExpiresAt.UnixMilli()
			}
			col := wideColumn(c.Column)
			v, _ := kit.CheckValue(wideValueTypes[col], c.Value)
			row.cells[col] = &modelCell{val: v, exp: cexp}
		}
	case store.DeleteRow:
		delete(rows, k)
	case store.DeleteCells:
		if row != nil {
			for _, c := range mu.Cells {
				row.cells[wideColumn(c.Column)] = nil
			}
		}
	case store.DeleteIfExpired:
		if row != nil && !row.live(now) {
			delete(rows, k)
		}
	}
}

func (m *model) deletePartition(p string) { delete(m.parts, p) }

// query returns the live rows a Query for the whole range would return.
func (m *model) query(p string, lo, hi store.Bound, reverse bool, now int64) []store.Row {
	var keys [][]any
	byKey := map[string]*modelRow{}
	for k, r := range m.parts[p] {
		if r.live(now) && inBounds(r.key, lo, hi) {
			keys = append(keys, r.key)
			byKey[k] = r
		}
	}
	scanOrder(keys, m.order, reverse)
	out := make([]store.Row, len(keys))
	for i, k := range keys {
		out[i] = byKey[fmtTuple(k)].read(p, now)
	}
	return out
}

func (m *model) get(p string, k []any, now int64) (store.Row, bool) {
	r := m.parts[p][fmtTuple(k)]
	if r == nil || !r.live(now) {
		return store.Row{}, false
	}
	return r.read(p, now), true
}

// index returns, in clustering order, the keys of the rows in p whose
// column col is live and equal to v.
func (m *model) index(p string, col int, v any, now int64) [][]any {
	var keys [][]any
	for _, r := range m.parts[p] {
		if c := r.cells[col]; c != nil && liveAt(c.exp, now) && valueEqual(v, c.val) {
			keys = append(keys, r.key)
		}
	}
	scanOrder(keys, m.order, false)
	return keys
}

// expiries lists every expiry in the model, for moving the clock onto
// exact boundaries.
func (m *model) expiries() []int64 {
	var out []int64
	for _, rows := range m.parts {
		for _, r := range rows {
			if r.markerExp != 0 {
				out = append(out, r.markerExp)
			}
			for _, c := range r.cells {
				if c != nil && c.exp != 0 {
					out = append(out, c.exp)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var (
	wideValueNames = []string{"v", "n", "b", "ts"}
	wideValueTypes = []store.Type{store.TypeText, store.TypeInt64, store.TypeBytes, store.TypeTimestamp}
)

func wideColumn(name string) int { return slices.Index(wideValueNames, name) }

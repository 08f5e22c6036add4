package storetest

import (
	"fmt"
	"sync"

	"github.com/ebb-data/ebb/store"
)

var concurrencyCases = []testCase{
	{"WritersLoseNothing", testWritersLoseNothing},
	{"ColumnsOfOneRow", testConcurrentColumns},
}

const (
	writers       = 8
	rowsPerWriter = 40
	writeBatch    = 5
)

// testWritersLoseNothing runs 8 writers at once, each writing its rows in
// small batches both into one shared partition and into a partition of its
// own; every row must be there afterwards, with its own values.
func testWritersLoseNothing(e *env) {
	spec := e.create("writers", wideSpec(store.Asc, 0))
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			own := fmt.Sprintf("own%d", w)
			for i := 0; i < rowsPerWriter; i += writeBatch {
				var batch []store.Mutation
				for j := i; j < i+writeBatch; j++ {
					v := fmt.Sprintf("w%d-%d", w, j)
					batch = append(batch,
						up("shared", int64(j), fmt.Sprintf("w%d", w), cell("v", v), cell("n", int64(w))),
						up(own, int64(j), "x", cell("v", v)))
				}
				// Alternate single-partition and mixed batches.
				if i%2 == 0 {
					if err := e.s.Write(e.ctx, spec.Name, batch); err != nil {
						e.t.Errorf("writer %d: %v", w, err)
						return
					}
					continue
				}
				for _, m := range batch {
					if err := e.s.Write(e.ctx, spec.Name, []store.Mutation{m}); err != nil {
						e.t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if e.t.Failed() {
		return
	}
	shared := e.all(spec.Name, "shared")
	if len(shared) != writers*rowsPerWriter {
		e.t.Fatalf("shared partition has %d rows, want %d", len(shared), writers*rowsPerWriter)
	}
	for _, r := range shared {
		j, w := r.Clustering[0].(int64), r.Clustering[1].(string)
		e.checkRow(r, []any{"shared"}, key(j, w), fmt.Sprintf("%s-%d", w, j), int64(w[1]-'0'), nil, nil)
	}
	for w := range writers {
		own := e.all(spec.Name, fmt.Sprintf("own%d", w))
		if len(own) != rowsPerWriter {
			e.t.Fatalf("partition own%d has %d rows, want %d", w, len(own), rowsPerWriter)
		}
		if ks := e.index(spec.Name, "by_v", []any{fmt.Sprintf("own%d", w)}, fmt.Sprintf("w%d-7", w)); len(ks) != 1 {
			e.t.Fatalf("index of own%d: %d keys for one row", w, len(ks))
		}
	}
}

// testConcurrentColumns has 8 writers upsert different columns of the same
// rows at once: a backend that rewrites whole rows without isolation loses
// columns here.
func testConcurrentColumns(e *env) {
	spec := store.TableSpec{
		PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
		Clustering:   []store.Column{{Name: "r", Type: store.TypeInt64}},
	}
	for c := range writers {
		spec.Values = append(spec.Values, store.Column{Name: fmt.Sprintf("c%d", c), Type: store.TypeInt64})
	}
	spec.Indexes = []store.IndexSpec{{Name: "by_c0", Column: "c0"}}
	spec = e.create("columns", spec)
	const rows = 20
	var wg sync.WaitGroup
	for c := range writers {
		wg.Go(func() {
			for r := range rows {
				m := store.Mutation{Partition: []any{"p"}, Clustering: []any{int64(r)},
					Cells: []store.Cell{cell(fmt.Sprintf("c%d", c), int64(r*100+c))}}
				if err := e.s.Write(e.ctx, spec.Name, []store.Mutation{m}); err != nil {
					e.t.Errorf("writer %d: %v", c, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e.t.Failed() {
		return
	}
	got := e.all(spec.Name, "p")
	if len(got) != rows {
		e.t.Fatalf("%d rows, want %d", len(got), rows)
	}
	for r, row := range got {
		want := make([]any, writers)
		for c := range want {
			want[c] = int64(r*100 + c)
		}
		e.checkRow(row, []any{"p"}, []any{int64(r)}, want...)
	}
	for r := range rows {
		if ks := e.index(spec.Name, "by_c0", []any{"p"}, int64(r*100)); len(ks) != 1 {
			e.t.Fatalf("index for row %d: %d keys", r, len(ks))
		}
	}
}

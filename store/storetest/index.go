package storetest

import (
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
)

var indexCases = []testCase{
	{"Lifecycle", testIndexLifecycle},
	{"Expiry", testIndexExpiry},
	{"BytesValues", testIndexBytes},
	{"Refuses", testIndexRefuses},
}

func (e *env) index(table, index string, partition []any, value any) [][]any {
	e.t.Helper()
	ks, err := e.s.QueryIndex(e.ctx, table, index, partition, value)
	if err != nil {
		e.t.Fatalf("QueryIndex %s.%s %v %s: %v", table, index, partition, fmtValue(value), err)
	}
	return ks
}

// checkIndex compares a lookup with the keys expected, in clustering order.
func (e *env) checkIndex(spec store.TableSpec, index string, partition []any, value any, want ...[]any) {
	e.t.Helper()
	scanOrder(want, spec.ClusteringOrder, false)
	e.checkKeys(fmt.Sprintf("%s %s=%s in %s at %s", spec.ClusteringOrder, index, fmtValue(value), fmtTuple(partition),
		e.clk.Now().Format(time.RFC3339Nano)), e.index(spec.Name, index, partition, value), want)
}

func testIndexLifecycle(e *env) {
	for _, order := range []store.Order{store.Asc, store.Desc} {
		spec := e.create("index_"+order.String(), wideSpec(order, 0))
		p, q := []any{"p"}, []any{"q"}
		e.write(spec.Name,
			up("p", 1, "a", cell("v", "red"), cell("n", int64(1))),
			up("p", 2, "a", cell("v", "blue")),
			up("p", 3, "a", cell("v", "red")),
			up("p", 3, "b", cell("v", "red")),
			up("p", 4, "a", cell("n", int64(4))),
			up("q", 1, "a", cell("v", "red")),
			up("pp", 1, "a", cell("v", "red")),
		)
		e.checkIndex(spec, "by_v", p, "red", key(1, "a"), key(3, "a"), key(3, "b"))
		e.checkIndex(spec, "by_v", p, "blue", key(2, "a"))
		e.checkIndex(spec, "by_v", q, "red", key(1, "a"))
		e.checkIndex(spec, "by_v", p, "green")
		e.checkIndex(spec, "by_v", p, "")
		e.checkIndex(spec, "by_v", []any{"nobody"}, "red")

		// Updates move a row between values; writing another column or
		// the same value again changes nothing.
		e.write(spec.Name, up("p", 1, "a", cell("v", "blue")))
		e.write(spec.Name, up("p", 3, "a", cell("n", int64(30))))
		e.write(spec.Name, up("p", 3, "b", cell("v", "red")))
		e.checkIndex(spec, "by_v", p, "red", key(3, "a"), key(3, "b"))
		e.checkIndex(spec, "by_v", p, "blue", key(1, "a"), key(2, "a"))

		// Deleting the cell or the row removes it from the index.
		e.write(spec.Name,
			store.Mutation{Kind: store.DeleteCells, Partition: p, Clustering: key(3, "a"), Cells: []store.Cell{{Column: "v"}}},
			store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: key(2, "a")})
		e.checkIndex(spec, "by_v", p, "red", key(3, "b"))
		e.checkIndex(spec, "by_v", p, "blue", key(1, "a"))

		// A value set, changed and set back within one batch is indexed
		// once, under its final value.
		e.write(spec.Name,
			up("p", 5, "a", cell("v", "red")),
			up("p", 5, "a", cell("v", "blue")),
			up("p", 5, "a", cell("v", "red")),
			up("p", 6, "a", cell("v", "red")),
			store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: key(6, "a")},
			up("p", 6, "a", cell("n", int64(6))))
		e.checkIndex(spec, "by_v", p, "red", key(3, "b"), key(5, "a"))
		e.checkIndex(spec, "by_v", p, "blue", key(1, "a"))

		if err := e.s.DeletePartition(e.ctx, spec.Name, p); err != nil {
			e.t.Fatal(err)
		}
		e.checkIndex(spec, "by_v", p, "red")
		e.checkIndex(spec, "by_v", p, "blue")
		e.checkIndex(spec, "by_v", q, "red", key(1, "a"))
		// The partition written again indexes afresh.
		e.write(spec.Name, up("p", 1, "a", cell("v", "red")))
		e.checkIndex(spec, "by_v", p, "red", key(1, "a"))
	}
}

func testIndexExpiry(e *env) {
	spec := e.create("indexexp", wideSpec(store.Asc, time.Minute))
	p := []any{"p"}
	t1, t2 := Epoch.Add(time.Second), Epoch.Add(2*time.Second)
	e.write(spec.Name,
		store.Mutation{Partition: p, Clustering: key(1, "row"), ExpiresAt: t1, Cells: []store.Cell{cell("v", "red")}},
		store.Mutation{Partition: p, Clustering: key(2, "cell"), NoExpiry: true, Cells: []store.Cell{
			{Column: "v", Value: "red", ExpiresAt: t1}, cell("n", int64(2))}},
		store.Mutation{Partition: p, Clustering: key(3, "later"), ExpiresAt: t2, Cells: []store.Cell{cell("v", "red")}},
		store.Mutation{Partition: p, Clustering: key(4, "default"), Cells: []store.Cell{cell("v", "red")}},
		// The row's marker expires first; its indexed cell lives on.
		store.Mutation{Partition: p, Clustering: key(5, "cell outlives"), ExpiresAt: t1, Cells: []store.Cell{
			{Column: "v", Value: "red", ExpiresAt: t2}}},
	)
	e.checkIndex(spec, "by_v", p, "red", key(1, "row"), key(2, "cell"), key(3, "later"), key(4, "default"), key(5, "cell outlives"))
	e.clk.Set(t1.Add(-time.Millisecond))
	e.checkIndex(spec, "by_v", p, "red", key(1, "row"), key(2, "cell"), key(3, "later"), key(4, "default"), key(5, "cell outlives"))
	e.clk.Set(t1)
	e.checkIndex(spec, "by_v", p, "red", key(3, "later"), key(4, "default"), key(5, "cell outlives"))
	e.clk.Set(t2)
	e.checkIndex(spec, "by_v", p, "red", key(4, "default"))

	// A stale entry for an expired value is not returned next to the
	// fresh one when the same value is written again.
	e.write(spec.Name, store.Mutation{Partition: p, Clustering: key(1, "row"), NoExpiry: true, Cells: []store.Cell{cell("v", "red")}})
	e.checkIndex(spec, "by_v", p, "red", key(1, "row"), key(4, "default"))
	// An expired value replaced by another is found only under the new one.
	e.write(spec.Name, store.Mutation{Partition: p, Clustering: key(3, "later"), NoExpiry: true, Cells: []store.Cell{cell("v", "blue")}})
	e.checkIndex(spec, "by_v", p, "blue", key(3, "later"))
	e.clk.Set(Epoch.Add(time.Minute))
	e.checkIndex(spec, "by_v", p, "red", key(1, "row"))
	e.checkIndex(spec, "by_v", p, "blue", key(3, "later"))
}

func testIndexBytes(e *env) {
	spec := e.create("indexbytes", wideSpec(store.Desc, 0))
	p := []any{"p"}
	values := [][]byte{{}, {0}, {0, 0}, {0xff}, {0, 0xff}, []byte("x")}
	var batch []store.Mutation
	for i, v := range values {
		batch = append(batch, up("p", int64(i), "a", cell("b", v)), up("p", int64(i), "b", cell("b", v)))
	}
	e.write(spec.Name, batch...)
	for i, v := range values {
		e.checkIndex(spec, "by_b", p, v, key(int64(i), "a"), key(int64(i), "b"))
	}
	e.checkIndex(spec, "by_b", p, []byte{1})
	// A nil []byte is the empty value, as when written.
	e.checkIndex(spec, "by_b", p, []byte(nil), key(0, "a"), key(0, "b"))
}

func testIndexRefuses(e *env) {
	spec := e.create("indexrefuses", wideSpec(store.Asc, 0))
	e.write(spec.Name, up("p", 1, "a", cell("v", "red")))
	bad := map[string]struct {
		index string
		part  []any
		value any
	}{
		"unknown index":           {"by_nothing", []any{"p"}, "red"},
		"index named as a column": {"v", []any{"p"}, "red"},
		"wrong value type":        {"by_v", []any{"p"}, []byte("red")},
		"nil value":               {"by_v", []any{"p"}, nil},
		"invalid UTF-8":           {"by_v", []any{"p"}, "\xff"},
		"empty partition":         {"by_v", []any{""}, "red"},
		"missing partition":       {"by_v", nil, "red"},
		"partition type":          {"by_v", []any{int64(1)}, "red"},
	}
	for what, c := range bad {
		if ks, err := e.s.QueryIndex(e.ctx, spec.Name, c.index, c.part, c.value); !isErr(err, store.ErrInvalid) {
			e.t.Errorf("QueryIndex with %s: %v, %v; want ErrInvalid", what, ks, err)
		}
	}
	if _, err := e.s.QueryIndex(e.ctx, tableName("noindex"), "by_v", []any{"p"}, "red"); !isErr(err, store.ErrTableNotFound) {
		e.t.Errorf("QueryIndex on a missing table: %v, want ErrTableNotFound", err)
	}
}

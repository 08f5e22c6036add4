package storetest

import (
	"fmt"
	"math"
	"time"

	"github.com/ebb-data/ebb/store"
)

var mutationCases = []testCase{
	{"UpsertSubsetKeepsOtherColumns", testUpsertSubset},
	{"DeleteCells", testDeleteCells},
	{"DeleteRow", testDeleteRow},
	{"LaterMutationWins", testLaterMutationWins},
	{"DeletePartition", testDeletePartition},
	{"Get", testGet},
	{"TypesRoundTrip", testTypesRoundTrip},
	{"NoClustering", testNoClustering},
	{"AtomicPartitionBatch", testAtomicPartitionBatch},
}

var (
	ts1 = time.Date(2024, 2, 29, 23, 59, 59, 999_000_000, time.UTC)
	ts2 = time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)
)

func testUpsertSubset(e *env) {
	spec := e.create("subset", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	e.write(spec.Name, up("p", 1, "a", cell("v", "one"), cell("n", int64(1)), cell("b", []byte{1}), cell("ts", ts1)))
	e.write(spec.Name, up("p", 1, "a", cell("n", int64(2))))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "one", int64(2), []byte{1}, ts1)
	e.write(spec.Name, up("p", 1, "a", cell("v", "two"), cell("ts", ts2)))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "two", int64(2), []byte{1}, ts2)
	// An upsert of no cells (re)writes only the row marker.
	e.write(spec.Name, up("p", 1, "a"))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "two", int64(2), []byte{1}, ts2)
	e.write(spec.Name, up("p", 2, "b"))
	e.checkRow(e.mustGet(spec.Name, p, key(2, "b")), p, key(2, "b"), nil, nil, nil, nil)
	rows := e.all(spec.Name, "p")
	e.checkKeys("partition p", keysOf(rows), [][]any{k, key(2, "b")})
	e.checkRow(rows[0], p, k, "two", int64(2), []byte{1}, ts2)
}

func testDeleteCells(e *env) {
	spec := e.create("delcells", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	e.write(spec.Name, up("p", 1, "a", cell("v", "one"), cell("n", int64(1)), cell("b", []byte{1}), cell("ts", ts1)))
	del := func(cols ...string) store.Mutation {
		m := store.Mutation{Kind: store.DeleteCells, Partition: p, Clustering: k}
		for _, c := range cols {
			m.Cells = append(m.Cells, store.Cell{Column: c})
		}
		return m
	}
	e.write(spec.Name, del("v", "ts"))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, nil, int64(1), []byte{1}, nil)
	// Deleting every cell leaves the row marker: the row stays live.
	e.write(spec.Name, del("n", "b"))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, nil, nil, nil, nil)
	e.write(spec.Name, up("p", 1, "a", cell("b", []byte{})))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, nil, nil, []byte{}, nil)
	// DeleteCells of a missing row does not create it.
	e.write(spec.Name, store.Mutation{Kind: store.DeleteCells, Partition: p, Clustering: key(9, "z"), Cells: []store.Cell{{Column: "v"}}})
	e.mustMiss(spec.Name, p, key(9, "z"))
	if rows := e.all(spec.Name, "p"); len(rows) != 1 {
		e.t.Fatalf("partition has %d rows, want 1", len(rows))
	}
	// Nor does it leave anything behind for the sweeper to miss: no expiry
	// is recorded for a row that was never written, so a stored remnant
	// would stay forever.
	if st, exact := e.stats(spec.Name); exact && st.Rows != 1 {
		e.t.Errorf("exact Stats after DeleteCells of a missing row = %+v, want 1 row", st)
	}
}

func testDeleteRow(e *env) {
	spec := e.create("delrow", wideSpec(store.Asc, 0))
	p := []any{"p"}
	e.write(spec.Name,
		up("p", 1, "a", cell("v", "one"), cell("n", int64(1))),
		up("p", 2, "a", cell("v", "two")))
	e.write(spec.Name, store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: key(1, "a")})
	e.mustMiss(spec.Name, p, key(1, "a"))
	e.checkKeys("after DeleteRow", keysOf(e.all(spec.Name, "p")), [][]any{key(2, "a")})
	// Deleting a missing row is not an error and changes nothing.
	e.write(spec.Name, store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: key(1, "a")},
		store.Mutation{Kind: store.DeleteRow, Partition: []any{"nobody"}, Clustering: key(1, "a")})
	e.checkKeys("after deleting missing rows", keysOf(e.all(spec.Name, "p")), [][]any{key(2, "a")})
	// A row written again after a delete holds only the new cells.
	e.write(spec.Name, up("p", 1, "a", cell("ts", ts1)))
	e.checkRow(e.mustGet(spec.Name, p, key(1, "a")), p, key(1, "a"), nil, nil, nil, ts1)
}

func testLaterMutationWins(e *env) {
	spec := e.create("order", wideSpec(store.Asc, 0))
	p := []any{"p"}
	e.write(spec.Name,
		up("p", 1, "a", cell("v", "first"), cell("n", int64(1))),
		up("p", 1, "a", cell("v", "second")),
		store.Mutation{Kind: store.DeleteCells, Partition: p, Clustering: key(1, "a"), Cells: []store.Cell{{Column: "n"}}},
		up("p", 1, "a", cell("b", []byte("x"))),

		up("p", 2, "a", cell("v", "gone")),
		store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: key(2, "a")},

		up("p", 3, "a", cell("v", "old"), cell("n", int64(3))),
		store.Mutation{Kind: store.DeleteRow, Partition: p, Clustering: key(3, "a")},
		up("p", 3, "a", cell("v", "new")),
	)
	e.checkRow(e.mustGet(spec.Name, p, key(1, "a")), p, key(1, "a"), "second", nil, []byte("x"), nil)
	e.mustMiss(spec.Name, p, key(2, "a"))
	e.checkRow(e.mustGet(spec.Name, p, key(3, "a")), p, key(3, "a"), "new", nil, nil, nil)
}

func testDeletePartition(e *env) {
	spec := e.create("delpart", wideSpec(store.Desc, 0))
	var batch []store.Mutation
	// "p" and "p\x00" and "pp" would share a prefix under a naive key
	// encoding; deleting "p" must touch only "p".
	parts := []string{"p", "p\x00", "pp", "o"}
	for _, part := range parts {
		for i := range 5 {
			batch = append(batch, up(part, int64(i), "x", cell("v", "red")))
		}
	}
	e.write(spec.Name, batch...)
	if err := e.s.DeletePartition(e.ctx, spec.Name, []any{"p"}); err != nil {
		e.t.Fatalf("DeletePartition: %v", err)
	}
	if rows := e.all(spec.Name, "p"); len(rows) != 0 {
		e.t.Fatalf("deleted partition has %d rows", len(rows))
	}
	if ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", []any{"p"}, "red"); err != nil || len(ks) != 0 {
		e.t.Fatalf("QueryIndex in the deleted partition = %v, %v", ks, err)
	}
	for _, part := range parts[1:] {
		if rows := e.all(spec.Name, part); len(rows) != 5 {
			e.t.Fatalf("partition %q has %d rows after deleting \"p\", want 5", part, len(rows))
		}
		if ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", []any{part}, "red"); err != nil || len(ks) != 5 {
			e.t.Fatalf("QueryIndex in partition %q = %d keys, %v; want 5", part, len(ks), err)
		}
	}
	// Deleting an empty partition is fine; the partition can be written again.
	if err := e.s.DeletePartition(e.ctx, spec.Name, []any{"nobody"}); err != nil {
		e.t.Fatalf("DeletePartition of an empty partition: %v", err)
	}
	e.write(spec.Name, up("p", 7, "y", cell("n", int64(7))))
	e.checkRow(e.mustGet(spec.Name, []any{"p"}, key(7, "y")), []any{"p"}, key(7, "y"), nil, int64(7), nil, nil)
	e.checkKeys("rewritten partition", keysOf(e.all(spec.Name, "p")), [][]any{key(7, "y")})

	for what, part := range map[string][]any{"empty": {""}, "missing": nil, "wrong type": {int64(1)}, "too long": {"a", "b"}} {
		if err := e.s.DeletePartition(e.ctx, spec.Name, part); !isErr(err, store.ErrInvalid) {
			e.t.Errorf("DeletePartition with a %s partition key: %v, want ErrInvalid", what, err)
		}
	}
	if err := e.s.DeletePartition(e.ctx, tableName("nopart"), []any{"p"}); !isErr(err, store.ErrTableNotFound) {
		e.t.Errorf("DeletePartition on a missing table: %v, want ErrTableNotFound", err)
	}
}

func testGet(e *env) {
	spec := e.create("get", wideSpec(store.Asc, 0))
	exp := Epoch.Add(time.Minute)
	e.write(spec.Name, store.Mutation{Partition: []any{"p"}, Clustering: key(1, "a"), ExpiresAt: exp, Cells: []store.Cell{cell("v", "x")}})
	row := e.mustGet(spec.Name, []any{"p"}, key(1, "a"))
	e.checkRow(row, []any{"p"}, key(1, "a"), "x", nil, nil, nil)
	e.checkExpiry(row, exp)
	e.mustMiss(spec.Name, []any{"p"}, key(1, "b"))
	e.mustMiss(spec.Name, []any{"q"}, key(1, "a"))
	e.clk.Set(exp)
	e.mustMiss(spec.Name, []any{"p"}, key(1, "a"))

	bad := map[string][2][]any{
		"short clustering":  {{"p"}, {int64(1)}},
		"wrong type":        {{"p"}, {"1", "a"}},
		"empty partition":   {{""}, key(1, "a")},
		"missing partition": {nil, key(1, "a")},
	}
	for what, k := range bad {
		if _, err := e.s.Get(e.ctx, spec.Name, k[0], k[1]); !isErr(err, store.ErrInvalid) {
			e.t.Errorf("Get with a %s: %v, want ErrInvalid", what, err)
		}
	}
	if _, err := e.s.Get(e.ctx, tableName("noget"), []any{"p"}, key(1, "a")); !isErr(err, store.ErrTableNotFound) {
		e.t.Errorf("Get on a missing table: %v, want ErrTableNotFound", err)
	}
}

// allTypesSpec has a key column and a value column of every type, with a
// two-part partition key.
func allTypesSpec(order store.Order) store.TableSpec {
	return store.TableSpec{
		PartitionKey: []store.Column{{Name: "pt", Type: store.TypeText}, {Name: "pb", Type: store.TypeBytes}},
		Clustering: []store.Column{
			{Name: "ct", Type: store.TypeText}, {Name: "ci", Type: store.TypeInt64},
			{Name: "cts", Type: store.TypeTimestamp}, {Name: "cb", Type: store.TypeBytes},
		},
		ClusteringOrder: order,
		Values: []store.Column{
			{Name: "vt", Type: store.TypeText}, {Name: "vi", Type: store.TypeInt64},
			{Name: "vts", Type: store.TypeTimestamp}, {Name: "vb", Type: store.TypeBytes},
		},
	}
}

var (
	roundTripTexts  = []string{"", "\x00", "a\x00b", "#", "a#b", "|", "a|b", "/", "a/b", "a", "ab", "ü日本", "\U0001F600", "\x7f"}
	roundTripInts   = []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
	roundTripTimes  = []time.Time{time.UnixMilli(-62135596800000), ts2, time.UnixMilli(-1), time.UnixMilli(0), time.UnixMilli(1), ts1, time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)}
	roundTripBlobs  = [][]byte{{}, {0}, {0, 0}, {0, 0xff}, {0xff}, {0xff, 0}, {1, 2, 3}, []byte("#|/")}
	partitionTexts  = []string{"a", "a\x00", "a\x00b", "a#", "a|", "ab"}
	partitionBlobs  = [][]byte{{0}, {0xff}, {0, 1}}
	subMillisecond  = time.Date(2025, 6, 1, 0, 0, 0, 123_456_789, time.FixedZone("UTC+5", 5*3600))
	subMillisecond2 = time.Date(1950, 6, 1, 0, 0, 0, 999_999_999, time.UTC)
)

func testTypesRoundTrip(e *env) {
	for _, order := range []store.Order{store.Asc, store.Desc} {
		spec := e.create("types_"+order.String(), allTypesSpec(order))
		type entry struct{ part, clus, vals []any }
		var entries []entry
		var batch []store.Mutation
		add := func(part, clus, vals []any) {
			entries = append(entries, entry{part, clus, vals})
			m := store.Mutation{Partition: part, Clustering: clus}
			for i, c := range spec.Values {
				m.Cells = append(m.Cells, cell(c.Name, vals[i]))
			}
			batch = append(batch, m)
		}
		for i, s := range roundTripTexts {
			pt := partitionTexts[i%len(partitionTexts)]
			pb := partitionBlobs[i%len(partitionBlobs)]
			ci := roundTripInts[i%len(roundTripInts)]
			ts := roundTripTimes[i%len(roundTripTimes)]
			blob := roundTripBlobs[i%len(roundTripBlobs)]
			add([]any{pt, pb}, []any{s, ci, ts, blob}, []any{s, ci, ts, blob})
		}
		for i, ci := range roundTripInts {
			for j, ts := range roundTripTimes {
				blob := roundTripBlobs[(i+j)%len(roundTripBlobs)]
				add([]any{"ints", []byte{1}}, []any{"k", ci, ts, blob}, []any{fmt.Sprint(ci), -ci, ts, blob})
			}
		}
		e.write(spec.Name, batch...)
		// Sub-millisecond timestamps are stored at millisecond precision
		// in UTC, in keys and in values alike.
		e.write(spec.Name, store.Mutation{Partition: []any{"ms", []byte{2}}, Clustering: []any{"k", int64(0), subMillisecond, []byte{}},
			Cells: []store.Cell{cell("vts", subMillisecond2)}})
		msKey := []any{"k", int64(0), time.UnixMilli(subMillisecond.UnixMilli()).UTC(), []byte{}}
		e.checkRow(e.mustGet(spec.Name, []any{"ms", []byte{2}}, []any{"k", int64(0), subMillisecond, []byte{}}),
			[]any{"ms", []byte{2}}, msKey, nil, nil, time.UnixMilli(subMillisecond2.UnixMilli()).UTC(), nil)

		byPart := map[string][]entry{}
		for _, en := range entries {
			got := e.mustGet(spec.Name, en.part, en.clus)
			e.checkRow(got, en.part, en.clus, en.vals...)
			pk := fmtTuple(en.part)
			byPart[pk] = append(byPart[pk], en)
		}
		// Scans return each partition's rows, and only its rows, in order.
		for _, ens := range byPart {
			want := make([][]any, len(ens))
			for i, en := range ens {
				want[i] = en.clus
			}
			scanOrder(want, order, false)
			rows := e.scan(spec.Name, store.Query{Partition: ens[0].part, Limit: 3})
			e.checkKeys(fmt.Sprintf("%s partition %s", order, fmtTuple(ens[0].part)), keysOf(rows), want)
			for _, r := range rows {
				if !tupleEqual(ens[0].part, r.Partition) {
					e.t.Fatalf("row %s returned for partition %s", fmtRow(r), fmtTuple(ens[0].part))
				}
			}
		}
	}
}

func testNoClustering(e *env) {
	spec := e.create("single", store.TableSpec{
		PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}, {Name: "n", Type: store.TypeInt64}},
		Values:       []store.Column{{Name: "v", Type: store.TypeText}, {Name: "w", Type: store.TypeInt64}},
		Indexes:      []store.IndexSpec{{Name: "by_v", Column: "v"}},
	})
	p := []any{"key", int64(-3)}
	e.write(spec.Name, store.Mutation{Partition: p, Cells: []store.Cell{cell("v", "one"), cell("w", int64(1))}})
	e.write(spec.Name, store.Mutation{Partition: p, Cells: []store.Cell{cell("v", "two")}})
	e.write(spec.Name, store.Mutation{Partition: []any{"key", int64(3)}, Cells: []store.Cell{cell("v", "two")}})
	row := e.mustGet(spec.Name, p, nil)
	e.checkRow(row, p, []any{}, "two", int64(1))
	if row2 := e.mustGet(spec.Name, p, []any{}); !tupleEqual(row.Values, row2.Values) {
		e.t.Fatalf("Get with nil and empty clustering differ: %s vs %s", fmtRow(row), fmtRow(row2))
	}
	rows := e.scan(spec.Name, store.Query{Partition: p, Limit: 1})
	if len(rows) != 1 {
		e.t.Fatalf("Query of a table without clustering returned %d rows", len(rows))
	}
	e.checkRow(rows[0], p, []any{}, "two", int64(1))
	ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", p, "two")
	if err != nil || len(ks) != 1 || len(ks[0]) != 0 {
		e.t.Fatalf("QueryIndex = %v, %v; want one empty key", ks, err)
	}
	if err := e.s.Write(e.ctx, spec.Name, []store.Mutation{{Partition: p, Clustering: []any{"x"}, Cells: []store.Cell{cell("v", "x")}}}); !isErr(err, store.ErrInvalid) {
		e.t.Fatalf("Write with a clustering value on a table without clustering: %v, want ErrInvalid", err)
	}
	e.write(spec.Name, store.Mutation{Kind: store.DeleteRow, Partition: p})
	e.mustMiss(spec.Name, p, nil)
	e.checkRow(e.mustGet(spec.Name, []any{"key", int64(3)}, nil), []any{"key", int64(3)}, []any{}, "two", nil)
}

// testAtomicPartitionBatch checks a single-partition batch of up to
// MaxAtomicBatch mutations (100 where the backend has no atomic batches)
// lands whole or not at all. On a backend that reports
// AtomicPartitionBatch this is the capability's promise; on the others a
// batch that fails validation must still write nothing, and a valid one
// must land whole once Write returns nil.
func testAtomicPartitionBatch(e *env) {
	n := 100
	if e.caps.AtomicPartitionBatch {
		if e.caps.MaxAtomicBatch < 1 {
			e.t.Fatalf("AtomicPartitionBatch with MaxAtomicBatch %d", e.caps.MaxAtomicBatch)
		}
		n = min(e.caps.MaxAtomicBatch, n)
	}
	spec := e.create("atomic", wideSpec(store.Asc, 0))
	batch := make([]store.Mutation, n)
	for i := range batch {
		batch[i] = up("p", int64(i), "a", cell("v", "red"), cell("n", int64(i)))
	}
	bad := append(append([]store.Mutation(nil), batch[:n-1]...), up("p", int64(n), "a", cell("nope", "x")))
	if err := e.s.Write(e.ctx, spec.Name, bad); !isErr(err, store.ErrInvalid) {
		e.t.Fatalf("batch with a bad last mutation: %v, want ErrInvalid", err)
	}
	if rows := e.all(spec.Name, "p"); len(rows) != 0 {
		e.t.Fatalf("refused atomic batch wrote %d rows", len(rows))
	}
	e.write(spec.Name, batch...)
	rows := e.all(spec.Name, "p")
	if len(rows) != n {
		e.t.Fatalf("atomic batch of %d wrote %d rows", n, len(rows))
	}
	for i, r := range rows {
		e.checkRow(r, []any{"p"}, key(int64(i), "a"), "red", int64(i), nil, nil)
	}
	if ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", []any{"p"}, "red"); err != nil || len(ks) != n {
		e.t.Fatalf("QueryIndex after the atomic batch: %d keys, %v; want %d", len(ks), err, n)
	}
}

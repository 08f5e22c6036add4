package storetest

import (
	"fmt"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
)

var expiryCases = []testCase{
	{"RowExpiryBoundary", testRowExpiryBoundary},
	{"ColumnExpiry", testColumnExpiry},
	{"CellOutlivesRow", testCellOutlivesRow},
	{"DefaultTTL", testDefaultTTL},
	{"ExpiredOnWrite", testExpiredOnWrite},
	{"ExtendAndRemoveExpiry", testExtendExpiry},
	{"DeleteIfExpired", testDeleteIfExpired},
	{"DeleteIfExpiredRacesUpsert", testDeleteIfExpiredRace},
}

func testRowExpiryBoundary(e *env) {
	spec := e.create("rowexp", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	exp := Epoch.Add(90 * time.Second)
	e.write(spec.Name,
		store.Mutation{Partition: p, Clustering: k, ExpiresAt: exp,
			Cells: []store.Cell{cell("v", "x"), cell("n", int64(5)), cell("b", []byte{}), cell("ts", ts2)}},
		up("p", 2, "a", cell("v", "stays")))
	for _, now := range []time.Time{Epoch, exp.Add(-time.Millisecond), exp.Add(-time.Microsecond), exp.Add(-time.Nanosecond)} {
		e.clk.Set(now)
		row := e.mustGet(spec.Name, p, k)
		e.checkRow(row, p, k, "x", int64(5), []byte{}, ts2)
		e.checkExpiry(row, exp)
		e.checkKeys("live at "+now.Format(time.RFC3339Nano), keysOf(e.all(spec.Name, "p")), [][]any{k, key(2, "a")})
	}
	// expiry == now means gone, to the millisecond, whatever is on disk.
	for _, now := range []time.Time{exp, exp.Add(time.Nanosecond), exp.Add(time.Millisecond), exp.Add(24 * time.Hour)} {
		e.clk.Set(now)
		e.mustMiss(spec.Name, p, k)
		e.checkKeys("expired at "+now.Format(time.RFC3339Nano), keysOf(e.all(spec.Name, "p")), [][]any{key(2, "a")})
	}
	// Read-resolved expiry hides the row; it does not delete it.
	e.clk.Set(exp.Add(-time.Millisecond))
	e.mustGet(spec.Name, p, k)
}

func testColumnExpiry(e *env) {
	spec := e.create("colexp", wideSpec(store.Asc, 0))
	p, k := []any{"p"}, key(1, "a")
	e1, e2 := Epoch.Add(time.Second), Epoch.Add(time.Minute)
	e.write(spec.Name, store.Mutation{Partition: p, Clustering: k, ExpiresAt: e2, Cells: []store.Cell{
		{Column: "v", Value: "short", ExpiresAt: e1},
		{Column: "n", Value: int64(7)},
		{Column: "b", Value: []byte("never"), ExpiresAt: e2.Add(time.Hour)},
	}})
	e.clk.Set(e1.Add(-time.Millisecond))
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, "short", int64(7), []byte("never"), nil)
	e.clk.Set(e1)
	row := e.mustGet(spec.Name, p, k)
	e.checkRow(row, p, k, nil, int64(7), []byte("never"), nil)
	e.checkExpiry(row, e2)
	rows := e.all(spec.Name, "p")
	if len(rows) != 1 {
		e.t.Fatalf("Query returned %d rows", len(rows))
	}
	e.checkRow(rows[0], p, k, nil, int64(7), []byte("never"), nil)
	// At the row's expiry the cells that inherited it go; the cell with a
	// later expiry of its own keeps the row live.
	e.clk.Set(e2)
	e.checkRow(e.mustGet(spec.Name, p, k), p, k, nil, nil, []byte("never"), nil)
	e.clk.Set(e2.Add(time.Hour))
	e.mustMiss(spec.Name, p, k)

	// A cell written with its own expiry into a row without one.
	e.write(spec.Name, store.Mutation{Partition: p, Clustering: key(2, "b"), NoExpiry: true, Cells: []store.Cell{
		{Column: "v", Value: "brief", ExpiresAt: e.clk.Now().Add(time.Millisecond)},
		{Column: "n", Value: int64(1)},
	}})
	e.checkRow(e.mustGet(spec.Name, p, key(2, "b")), p, key(2, "b"), "brief", int64(1), nil, nil)
	e.clk.Advance(time.Millisecond)
	row = e.mustGet(spec.Name, p, key(2, "b"))
	e.checkRow(row, p, key(2, "b"), nil, int64(1), nil, nil)
	e.checkExpiry(row, time.Time{})
}

func testCellOutlivesRow(e *env) {
	spec := e.create("outlive", wideSpec(store.Desc, 0))
	p, k := []any{"p"}, key(1, "a")
	rowExp, cellExp := Epoch.Add(time.Second), Epoch.Add(2*time.Second)
	e.write(spec.Name, store.Mutation{Partition: p, Clustering: k, ExpiresAt: rowExp, Cells: []store.Cell{
		{Column: "v", Value: "long", ExpiresAt: cellExp},
		{Column: "n", Value: int64(1)},
	}})
	// A row is live while its marker or any cell is live.
	e.clk.Set(rowExp)
	row := e.mustGet(spec.Name, p, k)
	e.checkRow(row, p, k, "long", nil, nil, nil)
	e.checkExpiry(row, rowExp)
	if rows := e.all(spec.Name, "p"); len(rows) != 1 {
		e.t.Fatalf("Query returned %d rows, want the row kept live by its cell", len(rows))
	}
	e.clk.Set(cellExp)
	e.mustMiss(spec.Name, p, k)
}

func testDefaultTTL(e *env) {
	const ttl = 10 * time.Second
	spec := e.create("ttl", wideSpec(store.Asc, ttl))
	p := []any{"p"}
	e.clk.Set(Epoch.Add(5 * time.Millisecond))
	t0 := e.clk.Now()
	explicit := t0.Add(time.Hour)
	e.write(spec.Name,
		up("p", 1, "default", cell("v", "x"), cell("n", int64(1))),
		store.Mutation{Partition: p, Clustering: key(2, "never"), NoExpiry: true, Cells: []store.Cell{cell("v", "x")}},
		store.Mutation{Partition: p, Clustering: key(3, "explicit"), ExpiresAt: explicit, Cells: []store.Cell{cell("v", "x")}},
		store.Mutation{Partition: p, Clustering: key(4, "cell"), NoExpiry: true, Cells: []store.Cell{
			{Column: "v", Value: "brief", ExpiresAt: t0.Add(2 * time.Second)}, cell("n", int64(4))}},
		up("p", 5, "mixed", store.Cell{Column: "v", Value: "long", ExpiresAt: t0.Add(time.Minute)}, cell("n", int64(5))),
	)
	e.checkExpiry(e.mustGet(spec.Name, p, key(1, "default")), t0.Add(ttl))
	e.checkExpiry(e.mustGet(spec.Name, p, key(2, "never")), time.Time{})
	e.checkExpiry(e.mustGet(spec.Name, p, key(3, "explicit")), explicit)
	e.checkExpiry(e.mustGet(spec.Name, p, key(5, "mixed")), t0.Add(ttl))

	e.clk.Set(t0.Add(2 * time.Second))
	e.checkRow(e.mustGet(spec.Name, p, key(4, "cell")), p, key(4, "cell"), nil, int64(4), nil, nil)

	e.clk.Set(t0.Add(ttl - time.Millisecond))
	e.checkRow(e.mustGet(spec.Name, p, key(1, "default")), p, key(1, "default"), "x", int64(1), nil, nil)
	e.clk.Set(t0.Add(ttl))
	e.mustMiss(spec.Name, p, key(1, "default"))
	// The cell with its own, later expiry outlives the default TTL.
	e.checkRow(e.mustGet(spec.Name, p, key(5, "mixed")), p, key(5, "mixed"), "long", nil, nil, nil)
	e.checkKeys("after the default TTL", keysOf(e.all(spec.Name, "p")),
		[][]any{key(2, "never"), key(3, "explicit"), key(4, "cell"), key(5, "mixed")})

	// The default TTL counts from each write: rewriting renews it.
	e.write(spec.Name, up("p", 1, "default", cell("v", "again")))
	e.checkExpiry(e.mustGet(spec.Name, p, key(1, "default")), t0.Add(2*ttl))
	e.clk.Set(t0.Add(2*ttl - time.Millisecond))
	e.checkRow(e.mustGet(spec.Name, p, key(1, "default")), p, key(1, "default"), "again", nil, nil, nil)

	e.clk.Set(t0.Add(1000 * time.Hour))
	e.checkKeys("much later", keysOf(e.all(spec.Name, "p")), [][]any{key(2, "never"), key(4, "cell")})
}

func testExpiredOnWrite(e *env) {
	spec := e.create("deadonarrival", wideSpec(store.Asc, 0))
	p := []any{"p"}
	now := e.clk.Now()
	// An expiry at or before now is accepted and writes an invisible row.
	e.write(spec.Name,
		store.Mutation{Partition: p, Clustering: key(1, "now"), ExpiresAt: now, Cells: []store.Cell{cell("v", "x")}},
		store.Mutation{Partition: p, Clustering: key(2, "past"), ExpiresAt: now.Add(-time.Hour), Cells: []store.Cell{cell("v", "x")}},
		store.Mutation{Partition: p, Clustering: key(3, "cell"), ExpiresAt: now.Add(-time.Hour), Cells: []store.Cell{
			{Column: "v", Value: "x", ExpiresAt: now.Add(time.Millisecond)}}},
	)
	e.mustMiss(spec.Name, p, key(1, "now"))
	e.mustMiss(spec.Name, p, key(2, "past"))
	row := e.mustGet(spec.Name, p, key(3, "cell"))
	e.checkRow(row, p, key(3, "cell"), "x", nil, nil, nil)
	e.checkKeys("after writing expired rows", keysOf(e.all(spec.Name, "p")), [][]any{key(3, "cell")})
	if ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", p, "x"); err != nil {
		e.t.Fatal(err)
	} else {
		e.checkKeys("QueryIndex", ks, [][]any{key(3, "cell")})
	}
}

func testExtendExpiry(e *env) {
	spec := e.create("extend", wideSpec(store.Asc, time.Minute))
	p := []any{"p"}
	exp := Epoch.Add(time.Second)
	var batch []store.Mutation
	for i := range 3 {
		batch = append(batch, store.Mutation{Partition: p, Clustering: key(int64(i), "a"), ExpiresAt: exp,
			Cells: []store.Cell{cell("v", "x"), cell("n", int64(i))}})
	}
	e.write(spec.Name, batch...)
	later := Epoch.Add(time.Hour)
	e.write(spec.Name,
		// Row 0: every cell rewritten with a later expiry.
		store.Mutation{Partition: p, Clustering: key(0, "a"), ExpiresAt: later, Cells: []store.Cell{cell("v", "x"), cell("n", int64(0))}},
		// Row 1: the marker made permanent; its old cells keep their expiry.
		store.Mutation{Partition: p, Clustering: key(1, "a"), NoExpiry: true},
	)
	e.clk.Set(exp)
	row := e.mustGet(spec.Name, p, key(0, "a"))
	e.checkRow(row, p, key(0, "a"), "x", int64(0), nil, nil)
	e.checkExpiry(row, later)
	row = e.mustGet(spec.Name, p, key(1, "a"))
	e.checkRow(row, p, key(1, "a"), nil, nil, nil, nil)
	e.checkExpiry(row, time.Time{})
	e.mustMiss(spec.Name, p, key(2, "a"))
	// Shortening works too: a later write wins whatever its expiry.
	e.write(spec.Name, store.Mutation{Partition: p, Clustering: key(0, "a"), ExpiresAt: exp.Add(time.Second), Cells: []store.Cell{cell("v", "x"), cell("n", int64(0))}})
	e.clk.Set(exp.Add(time.Second))
	e.mustMiss(spec.Name, p, key(0, "a"))
}

func testDeleteIfExpired(e *env) {
	spec := e.create("delifexp", wideSpec(store.Asc, 0))
	p := []any{"p"}
	exp := Epoch.Add(time.Second)
	row := func(i int64, cells ...store.Cell) store.Mutation {
		return store.Mutation{Partition: p, Clustering: key(i, "a"), ExpiresAt: exp, Cells: cells}
	}
	e.write(spec.Name,
		row(0, cell("v", "expired")),
		row(1, cell("v", "extended")),
		row(2, cell("v", "made permanent")),
		row(3, store.Cell{Column: "v", Value: "cell lives on", ExpiresAt: exp.Add(time.Hour)}),
		row(4, cell("v", "not yet")),
		store.Mutation{Partition: p, Clustering: key(5, "a"), NoExpiry: true, Cells: []store.Cell{cell("v", "no expiry")}},
	)
	e.write(spec.Name,
		store.Mutation{Partition: p, Clustering: key(1, "a"), ExpiresAt: exp.Add(time.Hour), Cells: []store.Cell{cell("v", "extended")}},
		store.Mutation{Partition: p, Clustering: key(2, "a"), NoExpiry: true, Cells: []store.Cell{cell("v", "made permanent")}},
	)
	del := func(i int64) store.Mutation {
		return store.Mutation{Kind: store.DeleteIfExpired, Partition: p, Clustering: key(i, "a")}
	}
	// Row 4 is checked before it expires: a live row is never deleted.
	e.clk.Set(exp.Add(-time.Millisecond))
	e.write(spec.Name, del(4))
	e.clk.Set(exp)
	e.write(spec.Name, del(0), del(1), del(2), del(3), del(5), del(9))
	e.checkKeys("after DeleteIfExpired", keysOf(e.all(spec.Name, "p")), [][]any{key(1, "a"), key(2, "a"), key(3, "a"), key(5, "a")})
	if ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", p, "expired"); err != nil || len(ks) != 0 {
		e.t.Fatalf("QueryIndex for the deleted row = %v, %v", ks, err)
	}
	// Moving the clock back shows what is physically left: row 0 is gone
	// for good, row 4 (live when checked) and the missing row 9 untouched.
	e.clk.Set(Epoch)
	e.checkKeys("physically present", keysOf(e.all(spec.Name, "p")),
		[][]any{key(1, "a"), key(2, "a"), key(3, "a"), key(4, "a"), key(5, "a")})
	if st, exact := e.stats(spec.Name); exact && st.Rows != 5 {
		e.t.Fatalf("exact Stats %+v, want 5 rows", st)
	}
}

// testDeleteIfExpiredRace races the sweeper's DeleteIfExpired against an
// upsert that revives the same expired row. Whichever lands first, the row
// must end up live: a delete decided on a stale read would lose the write.
func testDeleteIfExpiredRace(e *env) {
	spec := e.create("delifexprace", wideSpec(store.Asc, 0))
	const rows, rounds = 32, 4
	exp := Epoch.Add(time.Second)
	for round := range rounds {
		part := fmt.Sprintf("r%d", round)
		var batch []store.Mutation
		for i := range rows {
			batch = append(batch, store.Mutation{Partition: []any{part}, Clustering: key(int64(i), "a"), ExpiresAt: exp,
				Cells: []store.Cell{cell("v", "old"), cell("n", int64(i))}})
		}
		e.write(spec.Name, batch...)
	}
	e.clk.Set(exp)
	for round := range rounds {
		part := fmt.Sprintf("r%d", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range rows {
			k := key(int64(i), "a")
			wg.Go(func() {
				<-start
				err := e.s.Write(e.ctx, spec.Name, []store.Mutation{{Kind: store.DeleteIfExpired, Partition: []any{part}, Clustering: k}})
				if err != nil {
					e.t.Errorf("DeleteIfExpired: %v", err)
				}
			})
			wg.Go(func() {
				<-start
				err := e.s.Write(e.ctx, spec.Name, []store.Mutation{{Partition: []any{part}, Clustering: k, NoExpiry: true,
					Cells: []store.Cell{cell("v", "new")}}})
				if err != nil {
					e.t.Errorf("upsert: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		got := e.all(spec.Name, part)
		if len(got) != rows {
			e.t.Fatalf("round %d: %d of %d revived rows survived the race with DeleteIfExpired", round, len(got), rows)
		}
		for i, r := range got {
			// n expired with the old row, whether or not the delete won.
			e.checkRow(r, []any{part}, key(int64(i), "a"), "new", nil, nil, nil)
		}
	}
}

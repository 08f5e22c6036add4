package storetest

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

var queryCases = []testCase{
	{"Paging", testPaging},
	{"Bounds", testBounds},
	{"InvertedBounds", testInvertedBounds},
	{"Limits", testLimits},
	{"PageTokens", testPageTokens},
	{"PagingWithConcurrentInserts", testPagingConcurrentInserts},
	{"Refuses", testQueryRefuses},
	{"ScanMatchesQuery", testScanMatchesQuery},
	{"StopsWhenCancelled", testReadsStopWhenCancelled},
}

// pagingData writes, into partition "p", live rows interleaved with rows
// that expire at the returned time, plus rows in neighbouring partitions,
// and returns the live keys in natural order. Expired rows sit at both
// ends of the clustering order and in runs longer than a page, so a
// backend must read past them to fill pages and to decide whether a row
// follows.
func pagingData(e *env, table string) ([][]any, time.Time) {
	expires := e.clk.Now().Add(time.Second)
	var batch []store.Mutation
	var live [][]any
	for i := range 40 {
		c1, c2 := int64(i/3-6), fmt.Sprintf("k%02d", i)
		m := up("p", c1, c2, cell("v", c2), cell("n", int64(i)))
		dead := i < 2 || i >= 36 || (i >= 10 && i < 19) || i%5 == 0
		if dead {
			m.ExpiresAt = expires
		} else {
			live = append(live, key(c1, c2))
		}
		batch = append(batch, m)
	}
	for _, other := range []string{"o", "p\x00", "pa", "q"} {
		batch = append(batch, up(other, 0, "k", cell("v", "other")))
	}
	e.write(table, batch...)
	return live, expires
}

func testPaging(e *env) {
	for _, order := range []store.Order{store.Asc, store.Desc} {
		spec := e.create("paging_"+order.String(), wideSpec(order, 0))
		live, expires := pagingData(e, spec.Name)
		e.clk.Set(expires)
		for _, reverse := range []bool{false, true} {
			want := slices.Clone(live)
			scanOrder(want, order, reverse)
			for _, limit := range []int{1, 2, 7, len(live), len(live) + 1, 100, store.MaxLimit} {
				rows := e.scan(spec.Name, store.Query{Partition: []any{"p"}, Reverse: reverse, Limit: limit})
				e.checkKeys(fmt.Sprintf("%s reverse=%v limit=%d", order, reverse, limit), keysOf(rows), want)
				for _, r := range rows {
					if r.Values[colV] != r.Clustering[1] || !tupleEqual([]any{"p"}, r.Partition) {
						e.t.Fatalf("row %s carries another row's data", fmtRow(r))
					}
				}
			}
		}
	}
}

// boundKeys are the clustering keys testBounds writes: several rows per
// c1 value, including the int64 extremes whose encodings are all 0x00 or
// all 0xFF bytes, and c2 values that are prefixes of each other.
func boundKeys() [][]any {
	var keys [][]any
	for _, c1 := range []int64{math.MinInt64, -1, 0, 3, math.MaxInt64} {
		for _, c2 := range []string{"", "a", "a\x00", "b"} {
			keys = append(keys, key(c1, c2))
		}
	}
	return keys
}

func boundsToTest() []store.Bound {
	bounds := []store.Bound{{}}
	for _, v := range [][]any{
		{int64(math.MinInt64)}, {int64(-1)}, {int64(0)}, {int64(1)}, {int64(math.MaxInt64)},
		{int64(0), "a"}, {int64(0), ""}, {int64(0), "a\x00"}, {int64(0), "c"},
		{int64(math.MaxInt64), "b"}, {int64(math.MinInt64), ""},
	} {
		bounds = append(bounds, store.Bound{Values: v, Inclusive: true}, store.Bound{Values: v})
	}
	return bounds
}

// boundPairs returns the (low, high) pairs testBounds reads: every bound
// alone on either side, and pairs of both with every mix of inclusive and
// exclusive ends.
func boundPairs(bounds []store.Bound) [][2]store.Bound {
	var out [][2]store.Bound
	for _, b := range bounds {
		out = append(out, [2]store.Bound{b, {}})
		if b.Values != nil {
			out = append(out, [2]store.Bound{{}, b})
		}
	}
	for _, pair := range [][2][]any{
		{{int64(-1)}, {int64(3)}},
		{{int64(0), "a"}, {int64(0), "b"}},
		{{int64(0)}, {int64(0)}},
		{{int64(0), ""}, {int64(0), "a\x00"}},
		{{int64(math.MinInt64)}, {int64(math.MaxInt64)}},
	} {
		for _, incl := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
			out = append(out, [2]store.Bound{{Values: pair[0], Inclusive: incl[0]}, {Values: pair[1], Inclusive: incl[1]}})
		}
	}
	return out
}

func fmtFirst(rows []store.Row) string {
	if len(rows) == 0 {
		return "none"
	}
	return fmtRow(rows[0])
}

func fmtBound(b store.Bound) string {
	if b.Values == nil {
		return "none"
	}
	if b.Inclusive {
		return "incl" + fmtTuple(b.Values)
	}
	return "excl" + fmtTuple(b.Values)
}

func testBounds(e *env) {
	keys := boundKeys()
	bounds := boundsToTest()
	for _, order := range []store.Order{store.Asc, store.Desc} {
		spec := e.create("bounds_"+order.String(), wideSpec(order, 0))
		var batch []store.Mutation
		for _, k := range keys {
			batch = append(batch, up("p", k[0].(int64), k[1].(string), cell("n", k[0])))
		}
		e.write(spec.Name, batch...)
		for i, b := range boundPairs(bounds) {
			lo, hi := b[0], b[1]
			var want [][]any
			for _, k := range keys {
				if inBounds(k, lo, hi) {
					want = append(want, k)
				}
			}
			// Every fifth range is read in pages of 3, so that bounds are
			// also checked together with page tokens.
			limit := store.MaxLimit
			if i%5 == 0 {
				limit = 3
			}
			for _, reverse := range []bool{false, true} {
				w := slices.Clone(want)
				scanOrder(w, order, reverse)
				rows := e.scan(spec.Name, store.Query{Partition: []any{"p"}, Low: lo, High: hi, Reverse: reverse, Limit: limit})
				e.checkKeys(fmt.Sprintf("%s low=%s high=%s reverse=%v limit=%d", order, fmtBound(lo), fmtBound(hi), reverse, limit), keysOf(rows), w)
			}
		}
		// Ranges that hold no row, including an exclusive bound past the
		// last possible key in either direction, return nothing.
		empty := [][2]store.Bound{
			{{Values: []any{int64(math.MaxInt64)}}, {}},
			{{}, {Values: []any{int64(math.MinInt64)}}},
			{{Values: []any{int64(1)}, Inclusive: true}, {Values: []any{int64(2)}, Inclusive: true}},
			{{Values: []any{int64(0)}}, {Values: []any{int64(0)}}},
			{{Values: []any{int64(0), "a"}}, {Values: []any{int64(0), "a\x00"}}},
		}
		for _, b := range empty {
			for _, reverse := range []bool{false, true} {
				page, err := kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Low: b[0], High: b[1], Reverse: reverse, Limit: 5})
				if err != nil {
					e.t.Fatalf("%s low=%s high=%s: %v", order, fmtBound(b[0]), fmtBound(b[1]), err)
				}
				if len(page.Rows) != 0 || page.NextPageToken != nil {
					e.t.Errorf("%s low=%s high=%s reverse=%v: %d rows (first %s), token %x; want none",
						order, fmtBound(b[0]), fmtBound(b[1]), reverse, len(page.Rows), fmtFirst(page.Rows), page.NextPageToken)
				}
			}
		}
	}
}

// testInvertedBounds checks that a range whose Low is above its High either
// returns nothing or is refused as invalid; it never returns rows.
func testInvertedBounds(e *env) {
	spec := e.create("inverted", wideSpec(store.Asc, 0))
	e.write(spec.Name, up("p", 1, "a", cell("n", int64(1))), up("p", 5, "a", cell("n", int64(5))), up("p", 9, "a", cell("n", int64(9))))
	inverted := [][2]store.Bound{
		{{Values: []any{int64(6)}, Inclusive: true}, {Values: []any{int64(4)}, Inclusive: true}},
		{{Values: []any{int64(5), "b"}, Inclusive: true}, {Values: []any{int64(5), "a"}, Inclusive: true}},
		{{Values: []any{int64(math.MaxInt64)}, Inclusive: true}, {Values: []any{int64(math.MinInt64)}, Inclusive: true}},
	}
	for _, b := range inverted {
		for _, reverse := range []bool{false, true} {
			page, err := kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Low: b[0], High: b[1], Reverse: reverse, Limit: 10})
			if isErr(err, store.ErrInvalid) {
				continue
			}
			if err != nil || len(page.Rows) != 0 || page.NextPageToken != nil {
				e.t.Fatalf("inverted low=%s high=%s reverse=%v: %d rows, token %x, %v; want none or ErrInvalid",
					fmtBound(b[0]), fmtBound(b[1]), reverse, len(page.Rows), page.NextPageToken, err)
			}
		}
	}
}

func testLimits(e *env) {
	spec := e.create("limits", wideSpec(store.Asc, 0))
	var batch []store.Mutation
	for i := range 5 {
		batch = append(batch, up("p", int64(i), "a", cell("n", int64(i))))
	}
	e.write(spec.Name, batch...)
	for _, limit := range []int{0, -1, math.MinInt, store.MaxLimit + 1, math.MaxInt} {
		if _, err := kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Limit: limit}); !isErr(err, store.ErrInvalid) {
			e.t.Errorf("Query with limit %d: %v, want ErrInvalid", limit, err)
		}
	}
	page, err := kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Limit: 1})
	if err != nil || len(page.Rows) != 1 || page.NextPageToken == nil {
		e.t.Fatalf("limit 1: %d rows, token %x, %v; want 1 row and a token", len(page.Rows), page.NextPageToken, err)
	}
	e.checkKeys("limit 1", keysOf(page.Rows), [][]any{key(0, "a")})
	// A page that takes exactly the remaining rows has no token.
	page, err = kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Limit: 5})
	if err != nil || len(page.Rows) != 5 || page.NextPageToken != nil {
		e.t.Fatalf("limit 5 of 5 rows: %d rows, token %x, %v; want 5 rows and no token", len(page.Rows), page.NextPageToken, err)
	}
	page, err = kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Limit: store.MaxLimit, Reverse: true})
	if err != nil || len(page.Rows) != 5 || page.NextPageToken != nil {
		e.t.Fatalf("limit MaxLimit: %d rows, token %x, %v", len(page.Rows), page.NextPageToken, err)
	}
	page, err = kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"empty"}, Limit: 1})
	if err != nil || len(page.Rows) != 0 || page.NextPageToken != nil {
		e.t.Fatalf("empty partition: %d rows, token %x, %v", len(page.Rows), page.NextPageToken, err)
	}
}

func testPageTokens(e *env) {
	spec := e.create("tokens", wideSpec(store.Asc, 0))
	var batch []store.Mutation
	for i := range 6 {
		batch = append(batch, up("p", int64(i), "tok", cell("n", int64(i))))
	}
	e.write(spec.Name, batch...)
	q := store.Query{Partition: []any{"p"}, Limit: 2}
	page, err := kit.Query(e.ctx, e.s, spec.Name, q)
	if err != nil || page.NextPageToken == nil {
		e.t.Fatalf("first page: token %x, %v", page.NextPageToken, err)
	}
	tok := page.NextPageToken
	// The token is the caller's: mutating the returned rows or reusing it
	// later reads the same next page.
	q.PageToken = slices.Clone(tok)
	next, err := kit.Query(e.ctx, e.s, spec.Name, q)
	if err != nil {
		e.t.Fatal(err)
	}
	e.checkKeys("second page", keysOf(next.Rows), [][]any{key(2, "tok"), key(3, "tok")})
	again, err := kit.Query(e.ctx, e.s, spec.Name, q)
	if err != nil {
		e.t.Fatal(err)
	}
	e.checkKeys("second page, asked again", keysOf(again.Rows), [][]any{key(2, "tok"), key(3, "tok")})
	// Rows deleted after a token was issued are skipped; the token is a
	// position, not a row that must still exist.
	e.write(spec.Name, store.Mutation{Kind: store.DeleteRow, Partition: []any{"p"}, Clustering: key(1, "tok")},
		store.Mutation{Kind: store.DeleteRow, Partition: []any{"p"}, Clustering: key(2, "tok")})
	after, err := kit.Query(e.ctx, e.s, spec.Name, q)
	if err != nil {
		e.t.Fatal(err)
	}
	e.checkKeys("after deleting around the token", keysOf(after.Rows), [][]any{key(3, "tok"), key(4, "tok")})

	malformed := [][]byte{
		{0},
		{1, 2, 3},
		{0xff, 0xff, 0xff},
		tok[:len(tok)-1],
		append(slices.Clone(tok), 0x42, 0x00),
		[]byte("not a token at all"),
	}
	for _, bad := range malformed {
		for _, reverse := range []bool{false, true} {
			_, err := kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Limit: 2, Reverse: reverse, PageToken: bad})
			if !isErr(err, store.ErrInvalid) {
				e.t.Errorf("Query with the malformed token %x (reverse=%v): %v, want ErrInvalid", bad, reverse, err)
			}
		}
	}
}

// testPagingConcurrentInserts pages through a partition while rows are
// inserted into it, both between pages and concurrently: no row comes
// twice, the order holds, and every row that existed before the scan began
// is returned.
func testPagingConcurrentInserts(e *env) {
	spec := e.create("pagingrace", wideSpec(store.Desc, 0))
	const before = 30
	for _, reverse := range []bool{false, true} {
		part := fmt.Sprintf("r%v", reverse)
		var batch []store.Mutation
		var want [][]any
		for i := range before {
			c1 := int64(i * 10)
			batch = append(batch, up(part, c1, "orig", cell("n", c1)))
			want = append(want, key(c1, "orig"))
		}
		e.write(spec.Name, batch...)

		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			// Bounded, so that a fast writer cannot outrun the scan forever.
			for i := range 300 {
				select {
				case <-stop:
					return
				default:
				}
				c1 := int64(i%(before*10+20)) - 10
				if err := e.s.Write(e.ctx, spec.Name, []store.Mutation{up(part, c1, "new", cell("n", c1))}); err != nil {
					e.t.Errorf("concurrent insert: %v", err)
					return
				}
			}
		})
		q := store.Query{Partition: []any{part}, Reverse: reverse, Limit: 4}
		var got [][]any
		for pages := 0; ; pages++ {
			page, err := kit.Query(e.ctx, e.s, spec.Name, q)
			if err != nil {
				close(stop)
				wg.Wait()
				e.t.Fatalf("page %d: %v", pages, err)
			}
			got = append(got, keysOf(page.Rows)...)
			if page.NextPageToken == nil || pages > 1000 {
				break
			}
			q.PageToken = page.NextPageToken
			// Inserts around the position just passed, on both sides.
			last := page.Rows[len(page.Rows)-1].Clustering[0].(int64)
			e.write(spec.Name, up(part, last-1, "between", cell("n", int64(0))), up(part, last+1, "between", cell("n", int64(0))))
		}
		close(stop)
		wg.Wait()

		desc := !reverse // the table is descending
		for i := 1; i < len(got); i++ {
			c := compareNatural(got[i-1], got[i])
			if (desc && c <= 0) || (!desc && c >= 0) {
				e.t.Fatalf("reverse=%v: keys %s then %s: out of order or repeated", reverse, fmtTuple(got[i-1]), fmtTuple(got[i]))
			}
		}
		for _, k := range want {
			if !slices.ContainsFunc(got, func(g []any) bool { return tupleEqual(k, g) }) {
				e.t.Fatalf("reverse=%v: row %s, written before the scan, was skipped", reverse, fmtTuple(k))
			}
		}
	}
}

func testQueryRefuses(e *env) {
	spec := e.create("queryrefuses", wideSpec(store.Asc, 0))
	e.write(spec.Name, up("p", 1, "a", cell("n", int64(1))))
	bad := map[string]store.Query{
		"missing partition":    {Limit: 1},
		"empty partition":      {Partition: []any{""}, Limit: 1},
		"partition arity":      {Partition: []any{"p", "q"}, Limit: 1},
		"partition type":       {Partition: []any{int64(1)}, Limit: 1},
		"bound too long":       {Partition: []any{"p"}, Low: store.Bound{Values: []any{int64(1), "a", "x"}}, Limit: 1},
		"bound type":           {Partition: []any{"p"}, High: store.Bound{Values: []any{"1"}}, Limit: 1},
		"bound int not int64":  {Partition: []any{"p"}, Low: store.Bound{Values: []any{1}, Inclusive: true}, Limit: 1},
		"bound invalid UTF-8":  {Partition: []any{"p"}, Low: store.Bound{Values: []any{int64(1), "\xff"}}, Limit: 1},
		"bound nil value":      {Partition: []any{"p"}, Low: store.Bound{Values: []any{nil}}, Limit: 1},
		"limit zero":           {Partition: []any{"p"}},
		"limit above MaxLimit": {Partition: []any{"p"}, Limit: store.MaxLimit + 1},
	}
	for what, q := range bad {
		if page, err := kit.Query(e.ctx, e.s, spec.Name, q); !isErr(err, store.ErrInvalid) {
			e.t.Errorf("Query with %s: %d rows, %v; want ErrInvalid", what, len(page.Rows), err)
		}
	}
	if _, err := kit.Query(e.ctx, e.s, tableName("noquery"), store.Query{Partition: []any{"p"}, Limit: 1}); !isErr(err, store.ErrTableNotFound) {
		e.t.Errorf("Query on a missing table: %v, want ErrTableNotFound", err)
	}
}

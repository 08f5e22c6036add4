package storetest

import (
	"fmt"
	"slices"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// testScanMatchesQuery checks Scan against kit.Query, which pages by
// decoding what Scan hands out: the same rows, in the same order, with the
// same values, expiries and page tokens, page after page, in both orders,
// with expired rows and cells to skip; and that Scan adds up in Query.Tally
// exactly what it hands out.
func testScanMatchesQuery(e *env) {
	for _, order := range []store.Order{store.Asc, store.Desc} {
		spec := e.create("scan_"+order.String(), wideSpec(order, 0))
		_, expires := pagingData(e, spec.Name)
		e.write(spec.Name,
			up("p", 100, "all", cell("v", "x"), cell("n", int64(-7)), cell("b", []byte{}), cell("ts", time.UnixMilli(-1500).UTC())),
			store.Mutation{Partition: []any{"p"}, Clustering: key(101, "cell-expired"),
				Cells: []store.Cell{{Column: "v", Value: "gone", ExpiresAt: expires}, {Column: "n", Value: int64(1)}}})
		e.clk.Set(expires)
		for _, reverse := range []bool{false, true} {
			for _, limit := range []int{1, 3, store.MaxLimit} {
				q := store.Query{Partition: []any{"p"}, Reverse: reverse, Limit: limit}
				for page := 0; ; page++ {
					what := fmt.Sprintf("%s reverse=%v limit=%d page %d", order, reverse, limit, page)
					page, err := kit.Query(e.ctx, e.s, spec.Name, q)
					if err != nil {
						e.t.Fatalf("%s: Query: %v", what, err)
					}
					var got []store.RawRow
					var tally, want store.ScanTally
					sq := q
					sq.Tally = &tally
					next, err := e.s.Scan(e.ctx, spec.Name, sq, func(r *store.RawRow) error {
						want.Add(r)
						cp := store.RawRow{Clustering: slices.Clone(r.Clustering), ExpiresAt: r.ExpiresAt}
						for _, v := range r.Values {
							if v != nil {
								v = slices.Clone(v)
								if v == nil {
									v = []byte{}
								}
							}
							cp.Values = append(cp.Values, v)
						}
						got = append(got, cp)
						return nil
					})
					if err != nil {
						e.t.Fatalf("%s: Scan: %v", what, err)
					}
					if tally != want {
						e.t.Fatalf("%s: Scan tallied %+v, handed out %+v", what, tally, want)
					}
					if len(got) != len(page.Rows) {
						e.t.Fatalf("%s: Scan gave %d rows, Query %d", what, len(got), len(page.Rows))
					}
					for i, r := range page.Rows {
						if exp := r.ExpiresAt; (exp.IsZero() && got[i].ExpiresAt != 0) || (!exp.IsZero() && exp.UnixMilli() != got[i].ExpiresAt) {
							e.t.Fatalf("%s row %d: Scan expiry %d, Query %v", what, i, got[i].ExpiresAt, exp)
						}
						if ck := kit.EncodeClustering(&spec, r.Clustering); string(ck) != string(got[i].Clustering) {
							e.t.Fatalf("%s row %d: Scan key %x, Query key %x", what, i, got[i].Clustering, ck)
						}
						for c, v := range r.Values {
							raw := kit.RawValue(v)
							if (raw == nil) != (got[i].Values[c] == nil) || string(raw) != string(got[i].Values[c]) {
								e.t.Fatalf("%s row %d column %d: Scan %x, Query %v", what, i, c, got[i].Values[c], v)
							}
						}
					}
					if string(next) != string(page.NextPageToken) || (next == nil) != (page.NextPageToken == nil) {
						e.t.Fatalf("%s: Scan token %x, Query token %x", what, next, page.NextPageToken)
					}
					if page.NextPageToken == nil {
						break
					}
					q.PageToken = page.NextPageToken
				}
			}
		}
	}
}

package kit

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func wideSpec(order store.Order, ttl time.Duration) *store.TableSpec {
	return &store.TableSpec{
		Name:            "wide",
		PartitionKey:    []store.Column{{Name: "p", Type: store.TypeText}},
		Clustering:      []store.Column{{Name: "c1", Type: store.TypeInt64}, {Name: "c2", Type: store.TypeText}},
		ClusteringOrder: order,
		Values:          []store.Column{{Name: "v", Type: store.TypeText}, {Name: "n", Type: store.TypeInt64}, {Name: "b", Type: store.TypeBytes}, {Name: "ts", Type: store.TypeTimestamp}},
		DefaultTTL:      ttl,
		Indexes:         []store.IndexSpec{{Name: "by_v", Column: "v"}},
	}
}

func TestResolveBatchExpiry(t *testing.T) {
	spec := wideSpec(store.Asc, 10*time.Second)
	cellExp := testNow.Add(time.Minute)
	rowExp := testNow.Add(time.Hour)
	key := func(m store.Mutation) store.Mutation {
		m.Partition, m.Clustering = []any{"p"}, []any{int64(1), "a"}
		return m
	}
	cases := []struct {
		name      string
		m         store.Mutation
		wantRow   int64
		wantCells []int64
	}{
		{"default TTL", key(store.Mutation{Cells: []store.Cell{{Column: "v", Value: "x"}}}),
			testNow.Add(10 * time.Second).UnixMilli(), []int64{testNow.Add(10 * time.Second).UnixMilli()}},
		{"NoExpiry overrides default", key(store.Mutation{NoExpiry: true, Cells: []store.Cell{{Column: "v", Value: "x"}, {Column: "n", Value: int64(1), ExpiresAt: cellExp}}}),
			0, []int64{0, cellExp.UnixMilli()}},
		{"row expiry inherited", key(store.Mutation{ExpiresAt: rowExp, Cells: []store.Cell{{Column: "v", Value: "x"}, {Column: "n", Value: int64(1), ExpiresAt: cellExp}}}),
			rowExp.UnixMilli(), []int64{rowExp.UnixMilli(), cellExp.UnixMilli()}},
		{"sub-millisecond expiry floors", key(store.Mutation{ExpiresAt: rowExp.Add(999 * time.Microsecond)}),
			rowExp.UnixMilli(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveBatch(spec, []store.Mutation{c.m}, testNow, 0)
			if err != nil {
				t.Fatal(err)
			}
			r := got[0]
			if r.ExpiresAt != c.wantRow {
				t.Errorf("row expiry %d, want %d", r.ExpiresAt, c.wantRow)
			}
			if len(r.Cells) != len(c.wantCells) {
				t.Fatalf("%d cells, want %d", len(r.Cells), len(c.wantCells))
			}
			for i, want := range c.wantCells {
				if r.Cells[i].ExpiresAt != want {
					t.Errorf("cell %d expiry %d, want %d", i, r.Cells[i].ExpiresAt, want)
				}
			}
		})
	}
}

func TestResolveBatchCanonical(t *testing.T) {
	spec := wideSpec(store.Desc, 0)
	local := time.Date(1969, 12, 31, 23, 0, 0, 123_456_789, time.FixedZone("X", -3600))
	got, err := ResolveBatch(spec, []store.Mutation{{
		Partition: []any{"p"}, Clustering: []any{int64(-1), "a\x00"},
		Cells: []store.Cell{{Column: "ts", Value: local}, {Column: "b", Value: []byte(nil)}},
	}}, testNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := got[0]
	ts := r.Cells[0].Value.(time.Time)
	if ts.Location() != time.UTC || ts.UnixMilli() != local.UnixMilli() || ts.Nanosecond()%1e6 != 0 {
		t.Errorf("timestamp %v not canonical (UTC, ms) for %v", ts, local)
	}
	if b, ok := r.Cells[1].Value.([]byte); !ok || b == nil {
		t.Errorf("nil bytes became %#v, want an empty non-nil slice", r.Cells[1].Value)
	}
	if want := EncodeClustering(spec, []any{int64(-1), "a\x00"}); !bytes.Equal(r.ClusteringKey, want) {
		t.Errorf("clustering key %x, want %x", r.ClusteringKey, want)
	}
	dec, err := store.DecodeClustering(spec, r.ClusteringKey)
	if err != nil || dec[0] != int64(-1) || dec[1] != "a\x00" {
		t.Errorf("DecodeClustering = %v, %v", dec, err)
	}
}

// TestResolveBatchPartitions checks that sharing a partition's check and
// encoding between mutations changes nothing: however the rows of a batch
// pass their partitions (one slice for all, a slice each, interleaved, of
// types that need canonicalizing), each row resolves as it would alone.
func TestResolveBatchPartitions(t *testing.T) {
	tsSpec := &store.TableSpec{
		Name:         "ts",
		PartitionKey: []store.Column{{Name: "day", Type: store.TypeTimestamp}, {Name: "id", Type: store.TypeBytes}},
		Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
		Values:       []store.Column{{Name: "v", Type: store.TypeText}},
	}
	local := time.Date(2026, 3, 1, 13, 0, 0, 123_456_789, time.FixedZone("X", 3600))
	utc := time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)
	a, b := []any{"a"}, []any{"b"}
	tsA := []any{local, []byte("x")}
	cases := []struct {
		name  string
		spec  *store.TableSpec
		parts [][]any
	}{
		{"one slice", wideSpec(store.Asc, 0), [][]any{a, a, a}},
		{"a slice each", wideSpec(store.Asc, 0), [][]any{{"a"}, {"a"}, {"a"}}},
		{"interleaved slices", wideSpec(store.Asc, 0), [][]any{a, b, a, b, {"c"}, a}},
		{"interleaved values", wideSpec(store.Asc, 0), [][]any{{"a"}, {"b"}, {"a"}, {"a"}, {"b"}}},
		{"values alike but not equal", wideSpec(store.Asc, 0), [][]any{{"a"}, {"ab"}, {"a"}}},
		{"canonicalized", tsSpec, [][]any{tsA, tsA, {local, []byte("x")}, {utc, []byte("x")}, {local, []byte("y")}, tsA}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			batch := make([]store.Mutation, len(c.parts))
			for i, p := range c.parts {
				ck := []any{int64(i), "c"}
				if c.spec == tsSpec {
					ck = ck[:1]
				}
				batch[i] = store.Mutation{Partition: p, Clustering: ck}
			}
			got, err := ResolveBatch(c.spec, batch, testNow, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range got {
				p, pk, err := ResolvePartition(c.spec, c.parts[i])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(r.PartitionKey, pk) || fmt.Sprint(r.Partition) != fmt.Sprint(p) {
					t.Errorf("row %d: partition %v (%x), want %v (%x)", i, r.Partition, r.PartitionKey, p, pk)
				}
			}
		})
	}
	// A bad partition after a good one is refused at its own index.
	_, err := ResolveBatch(wideSpec(store.Asc, 0), []store.Mutation{
		{Partition: []any{"a"}, Clustering: []any{int64(0), "c"}},
		{Partition: []any{""}, Clustering: []any{int64(1), "c"}},
	}, testNow, 0)
	var me *store.MutationError
	if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, store.ErrInvalid) {
		t.Errorf("empty partition after a good one: %v, want a MutationError at index 1", err)
	}
}

func TestResolveBatchRefuses(t *testing.T) {
	spec := wideSpec(store.Asc, 0)
	good := func() store.Mutation {
		return store.Mutation{Partition: []any{"p"}, Clustering: []any{int64(1), "a"}, Cells: []store.Cell{{Column: "v", Value: "x"}}}
	}
	with := func(f func(*store.Mutation)) store.Mutation { m := good(); f(&m); return m }
	long := strings.Repeat("x", store.MaxKeyBytes)
	cases := []struct {
		name string
		m    store.Mutation
		max  int
		want error
	}{
		{"nil partition", with(func(m *store.Mutation) { m.Partition = nil }), 0, store.ErrInvalid},
		{"partition arity", with(func(m *store.Mutation) { m.Partition = []any{"p", "q"} }), 0, store.ErrInvalid},
		{"empty partition", with(func(m *store.Mutation) { m.Partition = []any{""} }), 0, store.ErrInvalid},
		{"partition type", with(func(m *store.Mutation) { m.Partition = []any{1} }), 0, store.ErrInvalid},
		{"short clustering", with(func(m *store.Mutation) { m.Clustering = []any{int64(1)} }), 0, store.ErrInvalid},
		{"int not int64", with(func(m *store.Mutation) { m.Clustering = []any{1, "a"} }), 0, store.ErrInvalid},
		{"value type", with(func(m *store.Mutation) { m.Cells[0].Value = int64(1) }), 0, store.ErrInvalid},
		{"nil value", with(func(m *store.Mutation) { m.Cells[0].Value = nil }), 0, store.ErrInvalid},
		{"bad UTF-8", with(func(m *store.Mutation) { m.Cells[0].Value = "\xff" }), 0, store.ErrInvalid},
		{"unknown column", with(func(m *store.Mutation) { m.Cells[0].Column = "nope" }), 0, store.ErrInvalid},
		{"key column as value", with(func(m *store.Mutation) { m.Cells[0].Column = "c2" }), 0, store.ErrInvalid},
		{"column twice", with(func(m *store.Mutation) { m.Cells = append(m.Cells, m.Cells[0]) }), 0, store.ErrInvalid},
		{"both expiries", with(func(m *store.Mutation) { m.NoExpiry, m.ExpiresAt = true, testNow.Add(time.Hour) }), 0, store.ErrInvalid},
		{"expiry before 1970", with(func(m *store.Mutation) { m.ExpiresAt = time.UnixMilli(-5) }), 0, store.ErrInvalid},
		{"expiry at epoch", with(func(m *store.Mutation) { m.ExpiresAt = time.UnixMilli(0) }), 0, store.ErrInvalid},
		{"cell expiry before 1970", with(func(m *store.Mutation) { m.Cells[0].ExpiresAt = time.UnixMilli(-1) }), 0, store.ErrInvalid},
		{"unknown kind", with(func(m *store.Mutation) { m.Kind = 42 }), 0, store.ErrInvalid},
		{"DeleteRow with cells", with(func(m *store.Mutation) { m.Kind = store.DeleteRow }), 0, store.ErrInvalid},
		{"DeleteIfExpired with cells", with(func(m *store.Mutation) { m.Kind = store.DeleteIfExpired }), 0, store.ErrInvalid},
		{"DeleteCells of nothing", with(func(m *store.Mutation) { m.Kind, m.Cells = store.DeleteCells, nil }), 0, store.ErrInvalid},
		{"DeleteCells unknown", with(func(m *store.Mutation) { m.Kind, m.Cells = store.DeleteCells, []store.Cell{{Column: "zz"}} }), 0, store.ErrInvalid},
		{"row too large", with(func(m *store.Mutation) { m.Cells[0].Value = strings.Repeat("v", 1000) }), 500, store.ErrTooLarge},
		{"partition key too large", with(func(m *store.Mutation) { m.Partition = []any{long} }), 0, store.ErrTooLarge},
		{"clustering key too large", with(func(m *store.Mutation) { m.Clustering = []any{int64(1), long} }), 0, store.ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			batch := []store.Mutation{good(), good(), c.m}
			_, err := ResolveBatch(spec, batch, testNow, c.max)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			var me *store.MutationError
			if !errors.As(err, &me) || me.Index != 2 {
				t.Fatalf("err = %#v, want a *store.MutationError with Index 2", err)
			}
		})
	}
	// The size limit is inclusive: a row of exactly maxRowBytes passes.
	got, err := ResolveBatch(spec, []store.Mutation{good()}, testNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveBatch(spec, []store.Mutation{good()}, testNow, got[0].Size); err != nil {
		t.Errorf("row of exactly the limit refused: %v", err)
	}
}

// clusteringKeys are the keys TestClusteringRange slices, in natural
// order, including the extreme int64s whose encodings are all 0x00 or all
// 0xFF in one direction or the other.
var clusteringKeys = func() [][]any {
	var out [][]any
	for _, c1 := range []int64{math.MinInt64, -1, 0, 2, math.MaxInt64} {
		for _, c2 := range []string{"", "a", "a\x00", "b"} {
			out = append(out, []any{c1, c2})
		}
	}
	return out
}()

func compareNatural(a, b []any) int {
	for i := range min(len(a), len(b)) {
		var r int
		switch x := a[i].(type) {
		case int64:
			r = cmp.Compare(x, b[i].(int64))
		case string:
			r = cmp.Compare(x, b[i].(string))
		}
		if r != 0 {
			return r
		}
	}
	return 0
}

func inBounds(k []any, q *store.Query) bool {
	if q.Low.Values != nil {
		c := compareNatural(k, q.Low.Values)
		if c < 0 || (c == 0 && !q.Low.Inclusive) {
			return false
		}
	}
	if q.High.Values != nil {
		c := compareNatural(k, q.High.Values)
		if c > 0 || (c == 0 && !q.High.Inclusive) {
			return false
		}
	}
	return true
}

func inRange(k []byte, r KeyRange) bool {
	return !r.Empty && bytes.Compare(k, r.Start) >= 0 && (r.End == nil || bytes.Compare(k, r.End) < 0)
}

// checkRangeShape checks that a range backends iterate is well formed:
// either flagged Empty or with Start below End, since an iterator given a
// lower bound above its upper bound is undefined in some engines.
func checkRangeShape(t *testing.T, what string, r KeyRange) {
	t.Helper()
	if !r.Empty && r.End != nil && bytes.Compare(r.Start, r.End) >= 0 {
		t.Errorf("%s: range [%x, %x) is not flagged Empty", what, r.Start, r.End)
	}
}

func TestClusteringRange(t *testing.T) {
	var bounds []store.Bound
	bounds = append(bounds, store.Bound{})
	for _, k := range clusteringKeys {
		for _, incl := range []bool{false, true} {
			bounds = append(bounds, store.Bound{Values: k[:1], Inclusive: incl}, store.Bound{Values: k, Inclusive: incl})
		}
	}
	failures := 0
	for _, order := range []store.Order{store.Asc, store.Desc} {
		spec := wideSpec(order, 0)
		for _, lo := range bounds {
			for _, hi := range bounds {
				q := &store.Query{Low: lo, High: hi}
				r, err := ClusteringRange(spec, q)
				if err != nil {
					t.Fatalf("%v %v %v: %v", order, lo, hi, err)
				}
				checkRangeShape(t, fmt.Sprintf("%v low=%s high=%s", order, fmtBound(lo), fmtBound(hi)), r)
				var wrong []string
				for _, k := range clusteringKeys {
					if inRange(EncodeClustering(spec, k), r) != inBounds(k, q) {
						wrong = append(wrong, fmt.Sprintf("%d/%q", k[0], k[1]))
					}
				}
				if len(wrong) > 0 {
					if failures++; failures <= 10 {
						t.Errorf("%v low=%s high=%s: range [%x, %x) misplaces %d keys: %s", order, fmtBound(lo), fmtBound(hi), r.Start, r.End, len(wrong), strings.Join(wrong, " "))
					}
				}
			}
		}
	}
}

func fmtBound(b store.Bound) string {
	if b.Values == nil {
		return "none"
	}
	op := "excl"
	if b.Inclusive {
		op = "incl"
	}
	return fmt.Sprintf("%s%v", op, b.Values)
}

func TestClusteringRangePageToken(t *testing.T) {
	for _, order := range []store.Order{store.Asc, store.Desc} {
		spec := wideSpec(order, 0)
		for _, reverse := range []bool{false, true} {
			for i, last := range clusteringKeys {
				tok := EncodeClustering(spec, last)
				q := &store.Query{Reverse: reverse, PageToken: tok,
					Low:  store.Bound{Values: []any{int64(-1)}, Inclusive: true},
					High: store.Bound{Values: []any{int64(2), "a\x00"}}}
				r, err := ClusteringRange(spec, q)
				if err != nil {
					t.Fatal(err)
				}
				checkRangeShape(t, fmt.Sprintf("%v reverse=%v token %d", order, reverse, i), r)
				for j, k := range clusteringKeys {
					// Keys after the token in scan direction remain.
					after := compareNatural(k, last) > 0
					if (order == store.Desc) != reverse {
						after = compareNatural(k, last) < 0
					}
					// A token from outside the bounds (a page of another
					// range) can only narrow them.
					after = after && inBounds(k, q)
					if got := inRange(EncodeClustering(spec, k), r); got != after {
						t.Errorf("%v reverse=%v token %d key %d: in range %v, want %v", order, reverse, i, j, got, after)
					}
				}
			}
		}
	}
}

func TestClusteringRangeRefuses(t *testing.T) {
	spec := wideSpec(store.Asc, 0)
	cases := []store.Query{
		{Low: store.Bound{Values: []any{int64(1), "a", "extra"}}},
		{High: store.Bound{Values: []any{"not an int"}}},
		{PageToken: []byte{1, 2, 3}},
		{PageToken: append(EncodeClustering(spec, []any{int64(1), "a"}), 7)},
		{PageToken: EncodeClustering(spec, []any{int64(1)})},
	}
	for i, q := range cases {
		if _, err := ClusteringRange(spec, &q); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("case %d: err = %v, want store.ErrInvalid", i, err)
		}
	}
	for _, l := range []int{-1, 0, store.MaxLimit + 1} {
		if err := store.CheckLimit(l); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckLimit(%d) = %v, want store.ErrInvalid", l, err)
		}
	}
	for _, l := range []int{1, store.MaxLimit} {
		if err := store.CheckLimit(l); err != nil {
			t.Errorf("CheckLimit(%d) = %v", l, err)
		}
	}
}

func TestMutationErrorUnwraps(t *testing.T) {
	err := fmt.Errorf("write t: %w", &store.MutationError{Index: 3, Err: fmt.Errorf("%w: bad", store.ErrInvalid)})
	var me *store.MutationError
	if !errors.As(err, &me) || me.Index != 3 || !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("%v does not unwrap to store.MutationError{3, store.ErrInvalid}", err)
	}
	if !strings.Contains(err.Error(), "mutation 3") {
		t.Errorf("message %q does not name the mutation", err)
	}
}

func TestResolveIndexLookup(t *testing.T) {
	spec := wideSpec(store.Asc, 0)
	spec.Indexes = append(spec.Indexes, store.IndexSpec{Name: "by_n", Column: "n"}, store.IndexSpec{Name: "by_ts", Column: "ts"})
	local := time.FixedZone("UTC+2", 2*60*60)
	cases := []struct {
		index   string
		value   any
		wantCol int
		wantV   any
	}{
		{"by_v", "x", 0, "x"},
		{"by_n", int64(7), 1, int64(7)},
		// A timestamp is compared in canonical form: UTC, whole milliseconds.
		{"by_ts", time.Date(2026, 3, 1, 14, 0, 0, 1_999_999, local), 3, time.Date(2026, 3, 1, 12, 0, 0, 1_000_000, time.UTC)},
	}
	same := func(want, got any) bool {
		if w, ok := want.(time.Time); ok {
			g, ok := got.(time.Time)
			return ok && g.Equal(w) && g.Location() == time.UTC
		}
		return got == want
	}
	wantPK := EncodeTuple(nil, []any{"p"}, false)
	for _, c := range cases {
		col, v, pk, err := ResolveIndexLookup(spec, c.index, []any{"p"}, c.value)
		if err != nil {
			t.Fatalf("%s: %v", c.index, err)
		}
		if col != c.wantCol || !same(c.wantV, v) || !bytes.Equal(pk, wantPK) {
			t.Errorf("%s: got (%d, %v, %x), want (%d, %v, %x)", c.index, col, v, pk, c.wantCol, c.wantV, wantPK)
		}
	}

	refused := []struct {
		name      string
		index     string
		partition []any
		value     any
		want      error
		inMessage string
	}{
		{"unknown index", "by_b", []any{"p"}, "x", store.ErrInvalid, `table "wide" has no index "by_b"`},
		// The index is checked before the value and the partition.
		{"unknown index first", "nope", []any{""}, 42, store.ErrInvalid, "no index"},
		{"value of the wrong type", "by_v", []any{"p"}, int64(42), store.ErrInvalid, ""},
		{"nil value", "by_n", []any{"p"}, nil, store.ErrInvalid, ""},
		{"empty partition value", "by_v", []any{""}, "x", store.ErrInvalid, ""},
		{"partition of the wrong arity", "by_v", []any{"p", "q"}, "x", store.ErrInvalid, ""},
		{"partition of the wrong type", "by_v", []any{int64(1)}, "x", store.ErrInvalid, ""},
		{"partition key too large", "by_v", []any{strings.Repeat("k", store.MaxKeyBytes+1)}, "x", store.ErrTooLarge, ""},
	}
	for _, c := range refused {
		col, v, pk, err := ResolveIndexLookup(spec, c.index, c.partition, c.value)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.inMessage) {
			t.Errorf("%s: message %q does not say %q", c.name, err, c.inMessage)
		}
		if col != 0 || v != nil || pk != nil {
			t.Errorf("%s: returned (%d, %v, %x) with the error", c.name, col, v, pk)
		}
	}
}

// BenchmarkResolveBatch resolves batches of 1000 upserts of one partition,
// passed as one slice shared by every row or as a slice per row, and of 10
// partitions interleaved, each one slice shared by its rows.
//
//	go test -run '^$' -bench ResolveBatch ./store/kit/
func BenchmarkResolveBatch(b *testing.B) {
	spec := wideSpec(store.Asc, time.Hour)
	shared := []any{"p00000001"}
	parts := make([][]any, 10)
	for i := range parts {
		parts[i] = []any{fmt.Sprintf("p%08d", i)}
	}
	for _, layout := range []string{"shared-slice", "slice-per-row", "interleaved-10"} {
		b.Run(layout, func(b *testing.B) {
			batch := make([]store.Mutation, 1000)
			for i := range batch {
				p := shared
				switch layout {
				case "slice-per-row":
					p = []any{"p00000001"}
				case "interleaved-10":
					p = parts[i%len(parts)]
				}
				batch[i] = store.Mutation{Partition: p, Clustering: []any{int64(i), "c"},
					Cells: []store.Cell{{Column: "v", Value: "value"}}}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ResolveBatch(spec, batch, testNow, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestResolveBatchNeverExpires checks that a table whose rows never expire
// refuses a row or cell expiry and takes rows without one.
func TestResolveBatchNeverExpires(t *testing.T) {
	spec := wideSpec(store.Asc, 0)
	spec.NeverExpires = true
	key := func(m store.Mutation) store.Mutation {
		m.Partition, m.Clustering = []any{"p"}, []any{int64(1), "a"}
		return m
	}
	for name, m := range map[string]store.Mutation{
		"row expiry":  key(store.Mutation{ExpiresAt: testNow.Add(time.Hour), Cells: []store.Cell{{Column: "v", Value: "x"}}}),
		"cell expiry": key(store.Mutation{Cells: []store.Cell{{Column: "v", Value: "x", ExpiresAt: testNow.Add(time.Hour)}}}),
	} {
		if _, err := ResolveBatch(spec, []store.Mutation{m}, testNow, 0); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "never expire") {
			t.Errorf("%s: %v, want ErrInvalid naming the table's promise", name, err)
		}
	}
	got, err := ResolveBatch(spec, []store.Mutation{key(store.Mutation{Cells: []store.Cell{{Column: "v", Value: "x"}}})}, testNow, 0)
	if err != nil || got[0].ExpiresAt != 0 || got[0].Cells[0].ExpiresAt != 0 {
		t.Fatalf("a row without expiry: %v %+v", err, got)
	}
	bad := *spec
	bad.DefaultTTL = time.Hour
	if err := bad.Validate(); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("NeverExpires with a default TTL: %v, want ErrInvalid", err)
	}
}

package store

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func wideSpec(order Order, ttl time.Duration) *TableSpec {
	return &TableSpec{
		Name:            "wide",
		PartitionKey:    []Column{{"p", TypeText}},
		Clustering:      []Column{{"c1", TypeInt64}, {"c2", TypeText}},
		ClusteringOrder: order,
		Values:          []Column{{"v", TypeText}, {"n", TypeInt64}, {"b", TypeBytes}, {"ts", TypeTimestamp}},
		DefaultTTL:      ttl,
		Indexes:         []IndexSpec{{"by_v", "v"}},
	}
}

func TestResolveBatchExpiry(t *testing.T) {
	spec := wideSpec(Asc, 10*time.Second)
	cellExp := testNow.Add(time.Minute)
	rowExp := testNow.Add(time.Hour)
	key := func(m Mutation) Mutation {
		m.Partition, m.Clustering = []any{"p"}, []any{int64(1), "a"}
		return m
	}
	cases := []struct {
		name      string
		m         Mutation
		wantRow   int64
		wantCells []int64
	}{
		{"default TTL", key(Mutation{Cells: []Cell{{Column: "v", Value: "x"}}}),
			testNow.Add(10 * time.Second).UnixMilli(), []int64{testNow.Add(10 * time.Second).UnixMilli()}},
		{"NoExpiry overrides default", key(Mutation{NoExpiry: true, Cells: []Cell{{Column: "v", Value: "x"}, {Column: "n", Value: int64(1), ExpiresAt: cellExp}}}),
			0, []int64{0, cellExp.UnixMilli()}},
		{"row expiry inherited", key(Mutation{ExpiresAt: rowExp, Cells: []Cell{{Column: "v", Value: "x"}, {Column: "n", Value: int64(1), ExpiresAt: cellExp}}}),
			rowExp.UnixMilli(), []int64{rowExp.UnixMilli(), cellExp.UnixMilli()}},
		{"sub-millisecond expiry floors", key(Mutation{ExpiresAt: rowExp.Add(999 * time.Microsecond)}),
			rowExp.UnixMilli(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveBatch(spec, []Mutation{c.m}, testNow, 0)
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
	spec := wideSpec(Desc, 0)
	local := time.Date(1969, 12, 31, 23, 0, 0, 123_456_789, time.FixedZone("X", -3600))
	got, err := ResolveBatch(spec, []Mutation{{
		Partition: []any{"p"}, Clustering: []any{int64(-1), "a\x00"},
		Cells: []Cell{{Column: "ts", Value: local}, {Column: "b", Value: []byte(nil)}},
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
	dec, err := DecodeClustering(spec, r.ClusteringKey)
	if err != nil || dec[0] != int64(-1) || dec[1] != "a\x00" {
		t.Errorf("DecodeClustering = %v, %v", dec, err)
	}
}

func TestResolveBatchRefuses(t *testing.T) {
	spec := wideSpec(Asc, 0)
	good := func() Mutation {
		return Mutation{Partition: []any{"p"}, Clustering: []any{int64(1), "a"}, Cells: []Cell{{Column: "v", Value: "x"}}}
	}
	with := func(f func(*Mutation)) Mutation { m := good(); f(&m); return m }
	long := strings.Repeat("x", MaxKeyBytes)
	cases := []struct {
		name string
		m    Mutation
		max  int
		want error
	}{
		{"nil partition", with(func(m *Mutation) { m.Partition = nil }), 0, ErrInvalid},
		{"partition arity", with(func(m *Mutation) { m.Partition = []any{"p", "q"} }), 0, ErrInvalid},
		{"empty partition", with(func(m *Mutation) { m.Partition = []any{""} }), 0, ErrInvalid},
		{"partition type", with(func(m *Mutation) { m.Partition = []any{1} }), 0, ErrInvalid},
		{"short clustering", with(func(m *Mutation) { m.Clustering = []any{int64(1)} }), 0, ErrInvalid},
		{"int not int64", with(func(m *Mutation) { m.Clustering = []any{1, "a"} }), 0, ErrInvalid},
		{"value type", with(func(m *Mutation) { m.Cells[0].Value = int64(1) }), 0, ErrInvalid},
		{"nil value", with(func(m *Mutation) { m.Cells[0].Value = nil }), 0, ErrInvalid},
		{"bad UTF-8", with(func(m *Mutation) { m.Cells[0].Value = "\xff" }), 0, ErrInvalid},
		{"unknown column", with(func(m *Mutation) { m.Cells[0].Column = "nope" }), 0, ErrInvalid},
		{"key column as value", with(func(m *Mutation) { m.Cells[0].Column = "c2" }), 0, ErrInvalid},
		{"column twice", with(func(m *Mutation) { m.Cells = append(m.Cells, m.Cells[0]) }), 0, ErrInvalid},
		{"both expiries", with(func(m *Mutation) { m.NoExpiry, m.ExpiresAt = true, testNow.Add(time.Hour) }), 0, ErrInvalid},
		{"expiry before 1970", with(func(m *Mutation) { m.ExpiresAt = time.UnixMilli(-5) }), 0, ErrInvalid},
		{"expiry at epoch", with(func(m *Mutation) { m.ExpiresAt = time.UnixMilli(0) }), 0, ErrInvalid},
		{"cell expiry before 1970", with(func(m *Mutation) { m.Cells[0].ExpiresAt = time.UnixMilli(-1) }), 0, ErrInvalid},
		{"unknown kind", with(func(m *Mutation) { m.Kind = 42 }), 0, ErrInvalid},
		{"DeleteRow with cells", with(func(m *Mutation) { m.Kind = DeleteRow }), 0, ErrInvalid},
		{"DeleteIfExpired with cells", with(func(m *Mutation) { m.Kind = DeleteIfExpired }), 0, ErrInvalid},
		{"DeleteCells of nothing", with(func(m *Mutation) { m.Kind, m.Cells = DeleteCells, nil }), 0, ErrInvalid},
		{"DeleteCells unknown", with(func(m *Mutation) { m.Kind, m.Cells = DeleteCells, []Cell{{Column: "zz"}} }), 0, ErrInvalid},
		{"row too large", with(func(m *Mutation) { m.Cells[0].Value = strings.Repeat("v", 1000) }), 500, ErrTooLarge},
		{"partition key too large", with(func(m *Mutation) { m.Partition = []any{long} }), 0, ErrTooLarge},
		{"clustering key too large", with(func(m *Mutation) { m.Clustering = []any{int64(1), long} }), 0, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			batch := []Mutation{good(), good(), c.m}
			_, err := ResolveBatch(spec, batch, testNow, c.max)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			var me *MutationError
			if !errors.As(err, &me) || me.Index != 2 {
				t.Fatalf("err = %#v, want a *MutationError with Index 2", err)
			}
		})
	}
	// The size limit is inclusive: a row of exactly maxRowBytes passes.
	got, err := ResolveBatch(spec, []Mutation{good()}, testNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveBatch(spec, []Mutation{good()}, testNow, got[0].Size); err != nil {
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

func inBounds(k []any, q *Query) bool {
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
	var bounds []Bound
	bounds = append(bounds, Bound{})
	for _, k := range clusteringKeys {
		for _, incl := range []bool{false, true} {
			bounds = append(bounds, Bound{Values: k[:1], Inclusive: incl}, Bound{Values: k, Inclusive: incl})
		}
	}
	failures := 0
	for _, order := range []Order{Asc, Desc} {
		spec := wideSpec(order, 0)
		for _, lo := range bounds {
			for _, hi := range bounds {
				q := &Query{Low: lo, High: hi}
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

func fmtBound(b Bound) string {
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
	for _, order := range []Order{Asc, Desc} {
		spec := wideSpec(order, 0)
		for _, reverse := range []bool{false, true} {
			for i, last := range clusteringKeys {
				tok := EncodeClustering(spec, last)
				q := &Query{Reverse: reverse, PageToken: tok,
					Low:  Bound{Values: []any{int64(-1)}, Inclusive: true},
					High: Bound{Values: []any{int64(2), "a\x00"}}}
				r, err := ClusteringRange(spec, q)
				if err != nil {
					t.Fatal(err)
				}
				checkRangeShape(t, fmt.Sprintf("%v reverse=%v token %d", order, reverse, i), r)
				for j, k := range clusteringKeys {
					// Keys after the token in scan direction remain.
					after := compareNatural(k, last) > 0
					if (order == Desc) != reverse {
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
	spec := wideSpec(Asc, 0)
	cases := []Query{
		{Low: Bound{Values: []any{int64(1), "a", "extra"}}},
		{High: Bound{Values: []any{"not an int"}}},
		{PageToken: []byte{1, 2, 3}},
		{PageToken: append(EncodeClustering(spec, []any{int64(1), "a"}), 7)},
		{PageToken: EncodeClustering(spec, []any{int64(1)})},
	}
	for i, q := range cases {
		if _, err := ClusteringRange(spec, &q); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: err = %v, want ErrInvalid", i, err)
		}
	}
	for _, l := range []int{-1, 0, MaxLimit + 1} {
		if err := CheckLimit(l); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckLimit(%d) = %v, want ErrInvalid", l, err)
		}
	}
	for _, l := range []int{1, MaxLimit} {
		if err := CheckLimit(l); err != nil {
			t.Errorf("CheckLimit(%d) = %v", l, err)
		}
	}
}

func TestMutationErrorUnwraps(t *testing.T) {
	err := fmt.Errorf("write t: %w", &MutationError{Index: 3, Err: fmt.Errorf("%w: bad", ErrInvalid)})
	var me *MutationError
	if !errors.As(err, &me) || me.Index != 3 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("%v does not unwrap to MutationError{3, ErrInvalid}", err)
	}
	if !strings.Contains(err.Error(), "mutation 3") {
		t.Errorf("message %q does not name the mutation", err)
	}
}

func TestResolveIndexLookup(t *testing.T) {
	spec := wideSpec(Asc, 0)
	spec.Indexes = append(spec.Indexes, IndexSpec{"by_n", "n"}, IndexSpec{"by_ts", "ts"})
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
		{"unknown index", "by_b", []any{"p"}, "x", ErrInvalid, `table "wide" has no index "by_b"`},
		// The index is checked before the value and the partition.
		{"unknown index first", "nope", []any{""}, 42, ErrInvalid, "no index"},
		{"value of the wrong type", "by_v", []any{"p"}, int64(42), ErrInvalid, ""},
		{"nil value", "by_n", []any{"p"}, nil, ErrInvalid, ""},
		{"empty partition value", "by_v", []any{""}, "x", ErrInvalid, ""},
		{"partition of the wrong arity", "by_v", []any{"p", "q"}, "x", ErrInvalid, ""},
		{"partition of the wrong type", "by_v", []any{int64(1)}, "x", ErrInvalid, ""},
		{"partition key too large", "by_v", []any{strings.Repeat("k", MaxKeyBytes+1)}, "x", ErrTooLarge, ""},
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

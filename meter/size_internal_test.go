package meter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/ebb-data/ebb/store"
)

// numBytesSlow is numBytes as the providers state the rule: count the
// significant digits, leading and trailing zeros trimmed.
func numBytesSlow(n int64) int {
	if n == 0 {
		return 2
	}
	u := uint64(n)
	if n < 0 {
		u = uint64(-n)
		if n == math.MinInt64 {
			u = 1 << 63
		}
	}
	for u%10 == 0 {
		u /= 10
	}
	digits := 0
	for ; u > 0; u /= 10 {
		digits++
	}
	return (digits+1)/2 + 1
}

func TestNumBytes(t *testing.T) {
	if got := numBytes(math.MaxInt64); got != neverBytes {
		t.Errorf("numBytes(math.MaxInt64) = %d, neverBytes is %d", got, neverBytes)
	}
	cases := []int64{0, 1, -1, 9, 10, 11, 99, 100, 101, 12345, 1_719_446_400_000, 1_719_446_400, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for p := range pow10 {
		v := int64(pow10[p] % math.MaxInt64)
		cases = append(cases, v, v-1, v+1, -v, -v+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		cases = append(cases, int64(r.Uint64()), int64(r.Uint64()>>r.IntN(64)))
	}
	for _, n := range cases {
		if got, want := numBytes(n), numBytesSlow(n); got != want {
			t.Errorf("numBytes(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestRowBytes holds the point read's written-out sizing to the general
// one, keySizes and rowValuesBytes, over keys and values of every type.
func TestRowBytes(t *testing.T) {
	var c counters
	spec := store.TableSpec{Name: "t", Indexes: []store.IndexSpec{{Name: "by_v1", Column: "v1"}}}
	for i := range 12 {
		spec.Values = append(spec.Values, store.Column{Name: fmt.Sprintf("v%d", i), Type: store.TypeBytes})
	}
	metas := []*tableMeta{newTableMeta("t", &spec, &c), newTableMeta("t", nil, &c)}
	ts := time.UnixMilli(1_719_446_400_123).UTC()
	keys := [][]any{nil, {"acc_1"}, {"acc_1", int64(2865744)}, {int64(-5), []byte("k\x00"), ts}, {ts, "e1"}, {1.5, true}}
	values := [][]any{nil, {[]byte("payload")}, {nil, []byte("x")}, {"s", int64(1200), ts, []byte{}},
		{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"), []byte("f"), []byte("g"), []byte("h"), []byte("i"), []byte("j"), []byte("k"), []byte("l")}}
	for _, m := range metas {
		for _, p := range keys {
			for _, ck := range keys {
				for _, vals := range values {
					for _, exp := range []time.Time{{}, ts} {
						r := store.Row{Values: vals, ExpiresAt: exp}
						pk, pkKs := keySizes(p)
						ckLen, ckKs := keySizes(ck)
						vd, cells, cellBytes := m.rowValuesBytes(&r)
						wantD := dynamoKeyBytes(pk, ckLen) + vd
						// Keyspaces, as AWS gives the rules: keys twice, 3 bytes
						// per partition-key column, 1 per 5 bytes of clustering,
						// an identifier per column and a timestamp per cell.
						id := m.colID
						wantK := 2*pkKs + len(p)*(id+3) + 2*ckKs + (ckKs+4)/5 + len(ck)*id + cellBytes + cells*(id+20)
						if d, k := m.rowBytes(&r, p, ck); d != wantD || k != wantK {
							t.Errorf("spec %v, keys %v %v, values %v, expiry %v: %d, %d bytes; want %d, %d",
								m.spec != nil, p, ck, vals, exp, d, k, wantD, wantK)
						}
					}
				}
			}
		}
	}
}

// TestUpsertBytes works one upsert out by hand: a row expiry, a cell with
// an expiry of its own, an indexed column.
func TestUpsertBytes(t *testing.T) {
	var c counters
	spec := store.TableSpec{Name: "t",
		Values:  []store.Column{{Name: "v", Type: store.TypeBytes}, {Name: "w", Type: store.TypeText}},
		Indexes: []store.IndexSpec{{Name: "by_w", Column: "w"}}}
	m := store.Mutation{Partition: []any{"a"}, Clustering: []any{int64(1)},
		ExpiresAt: time.UnixMilli(1_719_446_400_123), // 13 digits: 8 bytes
		Cells: []store.Cell{
			{Column: "v", Value: make([]byte, 10)},
			{Column: "w", Value: "xyz", ExpiresAt: time.UnixMilli(1_719_446_400_000)}, // 8 digits once trimmed: 5 bytes
		}}
	// DynamoDB: pk 2+("a" 1+2), sk 2+1+8 = 16; x 1+8; v0 2+10, e0 2+8;
	// v1 2+3, e1 2+5, i1 2+16; ttl 3+6: 86 bytes. Keyspaces (7 columns
	// with "_x", "_e_v" and "_e_w": 1-byte column identifiers): "a" twice,
	// its identifier and 3 bytes of metadata, 6; the clustering 1 (2
	// bytes) twice, 1 byte per 5 of it and its identifier, 6; five cells
	// ("_x" 8, v 10, "_e_v" 8, w 3, "_e_w" 5: 34 bytes) with an identifier
	// and a 20-byte client-side timestamp each, 105: 151. No row metadata:
	// it is billed for storage only.
	d, k := newTableMeta("t", &spec, &c).mutationBytes(&m, 3, 1)
	if d != 86 || k != 151 {
		t.Errorf("upsert: %d, %d bytes; want 86, 151", d, k)
	}
}

// TestCountersAligned holds what opCounters' layout relies on: 128 bytes
// each, the first at the start of a cache line; and tableMeta's, 128 bytes
// at the start of one.
func TestCountersAligned(t *testing.T) {
	if n := unsafe.Sizeof(opCounters{}); n != 128 {
		t.Errorf("opCounters is %d bytes, want 128", n)
	}
	// tableMeta's padding puts what a point read uses in one cache line.
	if n := unsafe.Sizeof(tableMeta{}); n != 128 {
		t.Errorf("tableMeta is %d bytes, want 128", n)
	}
	var c counters
	for range 10 {
		if a := uintptr(unsafe.Pointer(newTableMeta("t", nil, &c))); a%64 != 0 {
			t.Errorf("tableMeta at %#x, not on a cache line", a)
		}
	}
	for range 10 {
		s, err := Wrap(nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if a := uintptr(unsafe.Pointer(&s.c[0][0])); a%64 != 0 {
			t.Errorf("counters at %#x, not on a cache line", a)
		}
	}
}

// TestPointSize holds Get's fast sizing to rowBytes: the same DynamoDB
// size whenever it answers, and never one read unit where rowBytes makes
// it more, on rows about the 4 KB boundary too.
func TestPointSize(t *testing.T) {
	var c counters
	spec := store.TableSpec{Name: "t", Indexes: []store.IndexSpec{{Name: "by_v1", Column: "v1"}}}
	for i := range 12 {
		spec.Values = append(spec.Values, store.Column{Name: fmt.Sprintf("v%d", i), Type: store.TypeBytes})
	}
	// A spec of 6 value columns, within maxPointValues, and one of 12.
	small := spec
	small.Values = spec.Values[:6]
	metas := []*tableMeta{newTableMeta("t", &small, &c), newTableMeta("t", &spec, &c), newTableMeta("t", nil, &c)}
	ts := time.UnixMilli(1_719_446_400_123).UTC()
	keys := [][]any{nil, {"acc_1"}, {"acc_1", int64(2865744)}, {int64(-5), []byte("k\x00"), ts},
		{ts, "e1"}, {1.5, true}, {int64(math.MaxInt64), int64(math.MinInt64)}}
	values := [][]any{nil, {[]byte("payload")}, {nil, []byte("x")}, {"s", int64(1200), ts, []byte{}},
		{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"), []byte("f"), []byte("g"), []byte("h"), []byte("i"), []byte("j"), []byte("k"), []byte("l")}}
	// Rows about 4 KB on either model: one value of n bytes, for n from
	// 3,800 to 4,100, beside a number value of 11 bytes on Keyspaces.
	for n := 3800; n <= 4100; n += 3 {
		values = append(values, []any{make([]byte, n)}, []any{int64(math.MaxInt64), make([]byte, n)}, []any{nil, "", make([]byte, n)})
	}
	for _, m := range metas {
		for _, p := range keys {
			for _, ck := range keys {
				for _, vals := range values {
					for _, exp := range []time.Time{{}, ts} {
						r := store.Row{Values: vals, ExpiresAt: exp}
						wantD, wantK := m.rowBytes(&r, p, ck)
						d, ok := m.pointSize(&r, p, ck)
						switch {
						case ok && (d != wantD || ReadUnits(wantD) != 1 || ReadUnits(wantK) != 1):
							t.Errorf("spec %v, keys %v %v, values of %d, expiry %v: %d bytes, within one unit; want %d, %d bytes",
								m.spec != nil, p, ck, len(vals), exp, d, wantD, wantK)
						// The bound is loose by a few bytes per number only:
						// a row 100 bytes within 4 KB is always sized fast,
						// when its table's spec is known and has at most
						// maxPointValues values, and it has no more.
						case !ok && len(vals) <= int(m.nOver) && wantD <= readUnitBytes-100 && wantK <= readUnitBytes-100:
							t.Errorf("spec %v, keys %v %v, values of %d, expiry %v: not sized fast at %d, %d bytes",
								m.spec != nil, p, ck, len(vals), exp, wantD, wantK)
						}
					}
				}
			}
		}
	}
}

// rowValuesBytes, the general sizing TestRowBytes holds the point
// read's to, is the size of a row's values as read, with their
// attribute names and expiries on DynamoDB (d), and the row marker's "x";
// and on Keyspaces the cells ("_x", each value and its "_e_<col>") and
// their value bytes.
func (t *tableMeta) rowValuesBytes(r *store.Row) (d, cells, cellBytes int) {
	rowExp := neverBytes
	if !r.ExpiresAt.IsZero() {
		rowExp = numBytes(r.ExpiresAt.UnixMilli())
	}
	d, cells, cellBytes = 1+rowExp, 1, rowExp // "x", "_x"
	for i, v := range r.Values {
		if v != nil {
			vd, vk := t.valueBytes(i, v, rowExp)
			d, cells, cellBytes = d+vd, cells+2, cellBytes+vk+rowExp
		}
	}
	return d, cells, cellBytes
}

package meter

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Unit rounding, as both providers document it: writes per 1 KB, reads per
// 4 KB, each rounded up.
const (
	writeUnitBytes = 1024
	readUnitBytes  = 4096
)

// WriteUnits is the write request units of one write of n bytes: one per
// 1 KB, rounded up, and at least one.
func WriteUnits(n int) int64 {
	if n <= 0 {
		return 1
	}
	return int64((n + writeUnitBytes - 1) / writeUnitBytes)
}

// ReadUnits is the read request units of one strongly consistent
// (DynamoDB) or LOCAL_QUORUM (Keyspaces) read returning n bytes: one per
// 4 KB, rounded up, and at least one.
func ReadUnits(n int) int64 {
	if n <= 0 {
		return 1
	}
	return int64((n + readUnitBytes - 1) / readUnitBytes)
}

// numBytes is the size of a number as both providers count it: one byte per
// two significant digits (leading and trailing zeros trimmed), plus one.
func numBytes(n int64) int {
	if n == 0 {
		return 2
	}
	u := uint64(n)
	if n < 0 {
		u = -u // two's complement: right for math.MinInt64 too
	}
	for u%10 == 0 {
		u /= 10
	}
	return (decimalDigits(u)+1)/2 + 1
}

// pow10 holds the powers of ten a uint64 can hold.
var pow10 = [...]uint64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// decimalDigits is the number of decimal digits of u > 0, from its bit
// length (log10(2) is about 1233/4096) corrected by one comparison, so that
// sizing a number takes no loop of divisions.
func decimalDigits(u uint64) int {
	t := bits.Len64(u) * 1233 >> 12
	if u < pow10[t] {
		return t
	}
	return t + 1
}

// Sizes of numbers the meter cannot see: an expiry in Unix milliseconds
// (13 digits) and the ttl attribute in Unix seconds (10 digits); and of the
// expiry that stands for never, math.MaxInt64 (19 digits; a test holds it
// to numBytes).
const (
	msBytes    = 8
	secBytes   = 6
	neverBytes = 11
)

// keySizes returns a key tuple's length in the order-preserving key
// encoding the backends share (internal/keyenc: strings and byte strings
// with two bytes of terminator, numbers and times 8 bytes; the escape byte
// a NUL inside a string takes is not counted), and its values' encoded size
// in Keyspaces.
func keySizes(vals []any) (enc, ks int) {
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			enc += len(x) + 2
			ks += len(x)
		case []byte:
			enc += len(x) + 2
			ks += len(x)
		case int64:
			enc += 8
			ks += numBytes(x)
		default:
			enc += 8
			ks += 8
		}
	}
	return enc, ks
}

func tupleLen(vals []any) int {
	n, _ := keySizes(vals)
	return n
}

// tableMeta is what the meter knows of a table: its class and, when it
// could read it, its spec with what the size rules need precomputed. It is
// never changed once made, but for dead, set when the table is created or
// dropped anew and its spec may have changed.
type tableMeta struct {
	// The fields a point read uses come first, in the first cache line:
	// the struct is padded to 128 bytes, a size class whose objects start
	// on a cache line.
	name  string
	dead  atomic.Bool
	class Class
	// nOver is how many value columns valueOver covers: the spec's, when
	// it is known and has at most maxPointValues of them; otherwise 0.
	nOver uint8
	c     *classCounters // the class's tallies
	// colID is Keyspaces' column identifier size.
	colID int
	// valueOver[i] is what value column i adds to a DynamoDB item besides
	// its value and its expiry: the names "v<i>" and "e<i>" and, when the
	// column is indexed, "i<i>" with its 16-byte digest.
	valueOver [maxPointValues]uint8
	// indexed[i]: value column i has a local index (an i<i> attribute on
	// DynamoDB); nil when none has. nIndexed counts them.
	indexed  []bool
	nIndexed int
	spec     *store.TableSpec // nil when unknown
	_        [40]byte
}

// maxPointValues is the most value columns a table may have for Get to
// size its rows with pointSize; rowBytes sizes the rest.
const maxPointValues = 8

func newTableMeta(name string, spec *store.TableSpec, c *counters) *tableMeta {
	t := &tableMeta{name: name, class: Classify(name), spec: spec, colID: 1}
	t.c = &c[t.class]
	if spec == nil {
		return t
	}
	for _, ix := range spec.Indexes {
		if i := spec.ValueIndex(ix.Column); i >= 0 {
			if t.indexed == nil {
				t.indexed = make([]bool, len(spec.Values))
			}
			if !t.indexed[i] {
				t.indexed[i] = true
				t.nIndexed++
			}
		}
	}
	// On Keyspaces the table also holds "_x" and an "_e_<col>" per value.
	t.colID = keyspacesColumnID(len(spec.PartitionKey) + len(spec.Clustering) + 1 + 2*len(spec.Values))
	if len(spec.Values) <= maxPointValues {
		t.nOver = uint8(len(spec.Values))
		for i := range len(spec.Values) {
			name := 1 + digitsLen(i)
			over := 2 * name
			if t.indexed != nil && t.indexed[i] {
				over += name + 16
			}
			t.valueOver[i] = uint8(over)
		}
	}
	return t
}

// column returns the position of the named value column; pos (its place
// in the mutation) when the spec is unknown or lacks it.
func (t *tableMeta) column(name string, pos int) int {
	if t.spec == nil {
		return pos
	}
	if pos < len(t.spec.Values) && t.spec.Values[pos].Name == name {
		return pos // cells are most often in the spec's order
	}
	for i := range t.spec.Values {
		if t.spec.Values[i].Name == name {
			return i
		}
	}
	return pos
}

// digitsLen is the length of the decimal form of i >= 0.
func digitsLen(i int) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// dynamoValueBytes is a value's size as a DynamoDB attribute value: S and B
// their bytes, N (int64, timestamps in Unix ms) as numbers.
func dynamoValueBytes(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case int64:
		return numBytes(x)
	case int:
		return numBytes(int64(x))
	case time.Time:
		return numBytes(x.UnixMilli())
	}
	return 8
}

// dynamoKeyBytes is the size of an item's key attributes: "pk" holding the
// encoded partition and "sk" holding a space byte and the encoded
// clustering key.
func dynamoKeyBytes(pk, ck int) int { return 2 + pk + 2 + 1 + ck }

// upsertBytes is the size of what an upsert writes: the DynamoDB item (pk
// and ck its keys' encoded lengths) and the Keyspaces row (pkKs and ckKs
// its keys' Keyspaces sizes), in one pass over the cells.
func (t *tableMeta) upsertBytes(m *store.Mutation, pk, ck, pkKs, ckKs int) (d, k int) {
	d = dynamoKeyBytes(pk, ck)
	rowExp, finite := neverBytes, false // rowExp: the "x" and "e<i>" expiry
	switch {
	case !m.ExpiresAt.IsZero():
		rowExp, finite = numBytes(m.ExpiresAt.UnixMilli()), true
	case !m.NoExpiry && t.spec != nil && t.spec.DefaultTTL > 0:
		rowExp, finite = msBytes, true
	}
	d += 1 + rowExp               // "x"
	cells, cellBytes := 1, rowExp // Keyspaces: "_x", then each value and its "_e_<col>"
	for i := range m.Cells {
		c := &m.Cells[i]
		col := t.column(c.Column, i)
		name := 1 + digitsLen(col)
		var dv, kv int
		switch x := c.Value.(type) {
		case []byte:
			dv, kv = len(x), len(x)
		case string:
			dv, kv = len(x), len(x)
		default:
			dv, kv = dynamoValueBytes(x), keyspacesValueBytes(x)
		}
		d += name + dv // "v<i>"
		exp := rowExp
		if c.ExpiresAt.IsZero() {
			finite = finite && rowExp != neverBytes
		} else {
			exp = numBytes(c.ExpiresAt.UnixMilli())
		}
		d += name + exp // "e<i>"
		if col < len(t.indexed) && t.indexed[col] {
			d += name + 16 // "i<i>": a 16-byte digest
		}
		cells, cellBytes = cells+2, cellBytes+kv+exp
	}
	if finite {
		d += 3 + secBytes // "ttl"
	}
	return d, keyspacesRowBytes(t.colID, pkKs, len(m.Partition), ckKs, len(m.Clustering), cells, cellBytes)
}

// rowBytes is the size of a row read by its key: the DynamoDB item holding
// it and its encoded size on Keyspaces. It is keySizes and valueBytes
// written out as one function, the common types tested first and the rest
// handed to them. Get calls it for the rows pointSize cannot place within
// one read unit.
func (t *tableMeta) rowBytes(r *store.Row, partition, clustering []any) (d, k int) {
	var pk, pkKs, ck, ckKs int
	for i, v := range partition {
		if s, ok := v.(string); ok {
			pk, pkKs = pk+len(s)+2, pkKs+len(s)
		} else if n, ok := v.(int64); ok {
			pk, pkKs = pk+8, pkKs+numBytes(n)
		} else {
			e, ks := keySizes(partition[i : i+1])
			pk, pkKs = pk+e, pkKs+ks
		}
	}
	for i, v := range clustering {
		if s, ok := v.(string); ok {
			ck, ckKs = ck+len(s)+2, ckKs+len(s)
		} else if _, ok := v.(time.Time); ok {
			ck, ckKs = ck+8, ckKs+8
		} else {
			e, ks := keySizes(clustering[i : i+1])
			ck, ckKs = ck+e, ckKs+ks
		}
	}
	rowExp := neverBytes
	if !r.ExpiresAt.IsZero() {
		rowExp = numBytes(r.ExpiresAt.UnixMilli())
	}
	d = dynamoKeyBytes(pk, ck) + 1 + rowExp // "x"
	cells, cellBytes := 1, rowExp           // Keyspaces: "_x", then each value and its "_e_<col>"
	for i, v := range r.Values {
		// A byte string in one of the first ten columns, not indexed:
		// "v<i>" and "e<i>" of two bytes each.
		if b, ok := v.([]byte); ok && i < 10 && (i >= len(t.indexed) || !t.indexed[i]) {
			d += 2 + 2 + len(b) + rowExp
			cells, cellBytes = cells+2, cellBytes+len(b)+rowExp
			continue
		}
		if v != nil {
			vd, vk := t.valueBytes(i, v, rowExp)
			d, cells, cellBytes = d+vd, cells+2, cellBytes+vk+rowExp
		}
	}
	return d, keyspacesRowBytes(t.colID, pkKs, len(partition), ckKs, len(clustering), cells, cellBytes)
}

// pointSize sizes a row read by its key on Get's fast path, in one pass
// that measures text and bytes and sizes no number it need not. d is the
// DynamoDB item's size, exactly as rowBytes gives it. kMax bounds its
// Keyspaces size, taking every key column that is neither text nor bytes
// at 11 bytes (the most a number takes; a timestamp takes 8) instead of
// sizing it, and every value of those types at 11 too. ok reports that both
// are within 4 KB, where the read costs exactly one read unit on each model
// whatever the exact Keyspaces size. When it is false (a larger row, one
// with more values than the table's spec or than maxPointValues, or one of
// a table whose spec is unknown), the caller sizes the row with rowBytes.
func (t *tableMeta) pointSize(r *store.Row, partition, clustering []any) (d int, ok bool) {
	if len(r.Values) > int(t.nOver) {
		return 0, false
	}
	pn, po := keyLens(partition)
	cn, co := keyLens(clustering)
	rowExp := neverBytes
	if !r.ExpiresAt.IsZero() {
		rowExp = expiryBytes(r.ExpiresAt)
	}
	// pk and sk (see dynamoKeyBytes), with text and bytes 2 bytes longer
	// in the key encoding and other columns 8 bytes; then "x".
	d = 2 + pn + 2*len(partition) + 6*po + 2 + 1 + cn + 2*len(clustering) + 6*co + 1 + rowExp
	cells, cellBytes := 1, rowExp // Keyspaces: "_x", then each value and its "_e_<col>"
	for i, v := range r.Values {
		var dv, kv int
		if b, ok := v.([]byte); ok {
			dv, kv = len(b), len(b)
		} else if s, ok := v.(string); ok {
			dv, kv = len(s), len(s)
		} else if v == nil {
			continue
		} else {
			dv, kv = dynamoValueBytes(v), 11
		}
		d += int(t.valueOver[i]) + dv + rowExp
		cells, cellBytes = cells+2, cellBytes+kv+rowExp
	}
	kMax := keyspacesRowBytes(t.colID, pn+11*po, len(partition), cn+11*co, len(clustering), cells, cellBytes)
	return d, d <= readUnitBytes && kMax <= readUnitBytes
}

// expiryBytes is the size of an expiry as DynamoDB holds it, a number of
// Unix milliseconds. It is kept out of line, off pointSize's common path.
//
//go:noinline
func expiryBytes(t time.Time) int { return numBytes(t.UnixMilli()) }

// keyLens returns the summed lengths of a key tuple's text and byte string
// values, and how many values of other types it holds.
func keyLens(vals []any) (n, other int) {
	for _, v := range vals {
		if s, ok := v.(string); ok {
			n += len(s)
		} else if b, ok := v.([]byte); ok {
			n += len(b)
		} else {
			other++
		}
	}
	return n, other
}

// valueBytes is the size of the present value v of column i: on DynamoDB
// its attribute "v<i>", the expiry "e<i>" (rowExp bytes) and, when the
// column is indexed, "i<i>"; on Keyspaces the value's bytes (the cell's
// other bytes are keyspacesRowBytes').
func (t *tableMeta) valueBytes(i int, v any, rowExp int) (d, k int) {
	var dv, kv int
	switch x := v.(type) {
	case []byte:
		dv, kv = len(x), len(x)
	case string:
		dv, kv = len(x), len(x)
	default:
		dv, kv = dynamoValueBytes(v), keyspacesValueBytes(v)
	}
	name := 1 + digitsLen(i)
	d = 2*name + dv + rowExp
	if i < len(t.indexed) && t.indexed[i] {
		d += name + 16
	}
	return d, kv
}

// keyspacesValueBytes is a value's encoded size in Keyspaces: text and blob
// their bytes, bigint as a variable-length number, timestamp 8 bytes.
func keyspacesValueBytes(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case int64:
		return numBytes(x)
	case int:
		return numBytes(int64(x))
	}
	return 8
}

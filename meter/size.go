package meter

import (
	"math"
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

// Sizes of numbers the meter cannot see: an expiry in Unix milliseconds
// (13 digits) and the ttl attribute in Unix seconds (10 digits).
const (
	msBytes  = 8
	secBytes = 6
)

var neverBytes = numBytes(math.MaxInt64)

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
// could read it, its spec with what the size rules need precomputed.
type tableMeta struct {
	class Class
	spec  *store.TableSpec // nil when unknown
	// indexed[i]: value column i has a local index (an i<i> attribute on
	// DynamoDB).
	indexed []bool
	// colID is Keyspaces' column identifier size.
	colID int
}

func newTableMeta(name string, spec *store.TableSpec) *tableMeta {
	t := &tableMeta{class: Classify(name), spec: spec, colID: 1}
	if spec == nil {
		return t
	}
	t.indexed = make([]bool, len(spec.Values))
	for _, ix := range spec.Indexes {
		if i := spec.ValueIndex(ix.Column); i >= 0 {
			t.indexed[i] = true
		}
	}
	cols := len(spec.PartitionKey) + len(spec.Clustering) + len(spec.Values)
	t.colID = (cols + 61) / 62
	return t
}

// column returns the position of the named value column; pos (its place
// in the mutation) when the spec is unknown or lacks it.
func (t *tableMeta) column(name string, pos int) int {
	if t.spec == nil {
		return pos
	}
	for i := range t.spec.Values {
		if t.spec.Values[i].Name == name {
			return i
		}
	}
	return pos
}

func (t *tableMeta) valueType(col int) store.Type {
	if t.spec == nil || col >= len(t.spec.Values) {
		return 0
	}
	return t.spec.Values[col].Type
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

func expiryMs(t time.Time) int {
	if t.IsZero() {
		return 0
	}
	return numBytes(t.UnixMilli())
}

// dynamoUpsertBytes is the size of the item an upsert writes.
func (t *tableMeta) dynamoUpsertBytes(m *store.Mutation, pk, ck int) int {
	n := dynamoKeyBytes(pk, ck)
	rowExp := expiryMs(m.ExpiresAt) // 0: none of its own
	finite := rowExp > 0
	if rowExp == 0 {
		if !m.NoExpiry && t.spec != nil && t.spec.DefaultTTL > 0 {
			rowExp, finite = msBytes, true
		} else {
			rowExp = neverBytes
		}
	}
	n += 1 + rowExp // "x"
	for i := range m.Cells {
		c := &m.Cells[i]
		col := t.column(c.Column, i)
		name := 1 + digitsLen(col)
		n += name + dynamoValueBytes(c.Value) // "v<i>"
		if e := expiryMs(c.ExpiresAt); e > 0 {
			n += name + e // "e<i>"
		} else {
			n += name + rowExp
			finite = finite && rowExp != neverBytes
		}
		if col < len(t.indexed) && t.indexed[col] {
			n += name + 16 // "i<i>": a 16-byte digest
		}
	}
	if finite {
		n += 3 + secBytes // "ttl"
	}
	return n
}

// dynamoRowBytes is the size of the item holding a row as read.
func (t *tableMeta) dynamoRowBytes(r *store.Row, pk, ck int) int {
	n := dynamoKeyBytes(pk, ck)
	rowExp := expiryMs(r.ExpiresAt)
	if rowExp == 0 {
		rowExp = neverBytes
	}
	n += 1 + rowExp
	for i, v := range r.Values {
		if v == nil {
			continue
		}
		name := 1 + digitsLen(i)
		n += 2*name + dynamoValueBytes(v) + rowExp
		if i < len(t.indexed) && t.indexed[i] {
			n += name + 16
		}
	}
	return n
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

// keyspacesRowMetadata is the metadata Keyspaces adds to every row.
const keyspacesRowMetadata = 100

// keyspacesKeyBytes is the encoded size of a row's primary key: each
// partition-key column plus 3 bytes of metadata, each clustering column
// plus 1 byte per 5 bytes of value.
func keyspacesKeyBytes(partition, clustering []any) int {
	n := 0
	for _, v := range partition {
		n += keyspacesValueBytes(v) + 3
	}
	for _, v := range clustering {
		s := keyspacesValueBytes(v)
		n += s + (s+4)/5
	}
	return n
}

// keyspacesUpsertBytes is the encoded size of the row an upsert writes.
func (t *tableMeta) keyspacesUpsertBytes(m *store.Mutation, keys int) int {
	n := keys + keyspacesRowMetadata
	for i := range m.Cells {
		n += t.colID + keyspacesValueBytes(m.Cells[i].Value)
	}
	return n
}

// keyspacesRowBytes is the encoded size of a row as read.
func (t *tableMeta) keyspacesRowBytes(r *store.Row, keys int) int {
	n := keys + keyspacesRowMetadata
	for _, v := range r.Values {
		if v != nil {
			n += t.colID + keyspacesValueBytes(v)
		}
	}
	return n
}

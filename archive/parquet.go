package archive

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/ebb-data/ebb/store"
)

// layout maps a table's columns, in spec order (partition key, clustering,
// values), to a Parquet schema: one top-level column per table column,
// keys required and values optional (a value cell may be absent), text as
// UTF-8 strings, int64 as INT64, timestamps as INT64 milliseconds (UTC),
// bytes as BYTE_ARRAY.
type layout struct {
	cols   []store.Column
	keys   int   // the first keys of cols are the key columns
	leaf   []int // the Parquet column index of each of cols
	schema *parquet.Schema
}

func newLayout(spec store.TableSpec) (*layout, error) {
	l := &layout{}
	l.cols = append(append(append(l.cols, spec.PartitionKey...), spec.Clustering...), spec.Values...)
	l.keys = len(spec.PartitionKey) + len(spec.Clustering)
	g := parquet.Group{}
	for i, c := range l.cols {
		var n parquet.Node
		switch c.Type {
		case store.TypeText:
			n = parquet.String()
		case store.TypeInt64:
			n = parquet.Int(64)
		case store.TypeTimestamp:
			n = parquet.Timestamp(parquet.Millisecond)
		case store.TypeBytes:
			n = parquet.Leaf(parquet.ByteArrayType)
		default:
			return nil, store.Errorf(store.ErrInvalid, "archive: column %s of %s has type %s, which has no Parquet type here", c.Name, spec.Name, c.Type)
		}
		if i < l.keys {
			n = parquet.Required(n)
		} else {
			n = parquet.Optional(n)
		}
		g[c.Name] = n
	}
	l.schema = parquet.NewSchema(spec.Name, g)
	for _, c := range l.cols {
		leaf, ok := l.schema.Lookup(c.Name)
		if !ok {
			return nil, store.Errorf(store.ErrInvalid, "archive: column %s missing from the Parquet schema", c.Name)
		}
		l.leaf = append(l.leaf, leaf.ColumnIndex)
	}
	return l, nil
}

// row builds the Parquet row of one table row (vals in spec order, nil for
// an absent value), reusing dst.
func (l *layout) row(dst parquet.Row, vals []any) parquet.Row {
	dst = dst[:0]
	for i, v := range vals {
		col := l.leaf[i]
		def := 1
		if i < l.keys {
			def = 0 // required: no definition level
		}
		if v == nil {
			dst = append(dst, parquet.NullValue().Level(0, 0, col))
			continue
		}
		var pv parquet.Value
		switch x := v.(type) {
		case string:
			pv = parquet.ByteArrayValue([]byte(x))
		case int64:
			pv = parquet.Int64Value(x)
		case time.Time:
			pv = parquet.Int64Value(x.UnixMilli())
		case []byte:
			pv = parquet.ByteArrayValue(x)
		}
		dst = append(dst, pv.Level(0, def, col))
	}
	// Parquet wants a row's values in column order.
	sortRow(dst)
	return dst
}

// values decodes a Parquet row back into the table's values, in spec order.
func (l *layout) values(r parquet.Row, dst []any) ([]any, error) {
	dst = dst[:0]
	// A row holds one value per column (no repeated columns), in column
	// order.
	for i, c := range l.cols {
		col := l.leaf[i]
		ok := col < len(r) && r[col].Column() == col
		v := parquet.Value{}
		if ok {
			v = r[col]
		}
		if !ok || v.IsNull() {
			if i < l.keys {
				return nil, store.Errorf(ErrUnverified, "a row of the object has no %s", c.Name)
			}
			dst = append(dst, nil)
			continue
		}
		switch c.Type {
		case store.TypeText:
			dst = append(dst, string(v.ByteArray()))
		case store.TypeInt64:
			dst = append(dst, v.Int64())
		case store.TypeTimestamp:
			dst = append(dst, time.UnixMilli(v.Int64()).UTC())
		case store.TypeBytes:
			dst = append(dst, append([]byte{}, v.ByteArray()...))
		}
	}
	return dst, nil
}

func sortRow(r parquet.Row) {
	// Insertion sort: rows have a handful of columns.
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].Column() < r[j-1].Column(); j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

// rowHash is the rows checksum: SHA-256 over every row in order, each
// value written as a presence byte and, when present, its length and
// canonical bytes (text and bytes as they are, int64 and timestamps in
// milliseconds as 8 bytes big-endian). The table's rows and the object's
// rows hash alike when they hold the same values in the same order.
type rowHash struct {
	h   hash.Hash
	buf []byte
	num [8]byte
}

func newRowHash() *rowHash { return &rowHash{h: sha256.New()} }

func (r *rowHash) add(vals []any) {
	b := r.buf[:0]
	for _, v := range vals {
		var p []byte
		switch x := v.(type) {
		case nil:
			b = append(b, 0)
			continue
		case string:
			p = []byte(x)
		case []byte:
			p = x
		case int64:
			p = binary.BigEndian.AppendUint64(r.num[:0], uint64(x))
		case time.Time:
			p = binary.BigEndian.AppendUint64(r.num[:0], uint64(x.UnixMilli()))
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	r.h.Write(b)
	r.buf = b
}

func (r *rowHash) sum() []byte { return r.h.Sum(nil) }

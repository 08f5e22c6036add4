package cql

import (
	"encoding/binary"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
)

// rawCol receives one column of a result row as the bytes the cluster
// sent: a null stays distinguishable from an empty value (the driver's own
// conversions turn a null timestamp into the zero time, which is also a
// valid value), and the bytes are already what store.RawRow carries.
type rawCol struct {
	b    []byte
	null bool
}

// UnmarshalCQL implements gocql.Unmarshaler.
func (c *rawCol) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	if data == nil {
		c.null, c.b = true, c.b[:0]
		return nil
	}
	// The driver reuses its frame buffer: keep a copy, non-nil even when
	// empty (a nil RawRow value means an absent cell).
	if c.b == nil {
		c.b = make([]byte, 0, len(data))
	}
	c.null, c.b = false, append(c.b[:0], data...)
	return nil
}

// int64 decodes a bigint or timestamp; ok is false for a null.
func (c *rawCol) int64() (int64, bool, error) {
	if c.null {
		return 0, false, nil
	}
	if len(c.b) != 8 {
		return 0, false, fmt.Errorf("cql: stored 64-bit value has %d bytes", len(c.b))
	}
	return int64(binary.BigEndian.Uint64(c.b)), true, nil
}

// value decodes a column of type t into its canonical Go value (nil for a
// null).
func (c *rawCol) value(t store.Type) (any, error) {
	if c.null {
		return nil, nil
	}
	switch t {
	case store.TypeText:
		return string(c.b), nil
	case store.TypeBytes:
		return append([]byte{}, c.b...), nil
	case store.TypeInt64, store.TypeTimestamp:
		n, _, err := c.int64()
		if err != nil {
			return nil, err
		}
		if t == store.TypeTimestamp {
			return time.UnixMilli(n).UTC(), nil
		}
		return n, nil
	}
	return nil, fmt.Errorf("cql: unknown column type %v", t)
}

// rowBuf holds the destinations of one row read with schema.rowCols:
// clustering columns, marker, then value/expiry pairs.
type rowBuf struct {
	cols []rawCol
	dest []any
	nck  int
}

func newRowBuf(spec *store.TableSpec) *rowBuf {
	n := len(spec.Clustering) + 1 + 2*len(spec.Values)
	b := &rowBuf{cols: make([]rawCol, n), dest: make([]any, n), nck: len(spec.Clustering)}
	for i := range b.cols {
		b.dest[i] = &b.cols[i]
	}
	return b
}

// decoded is one row as read, resolved against now.
type decoded struct {
	clustering []any
	values     []any
	marker     int64 // 0 when absent or never
	live       bool
}

// decode resolves the row in b at now (Unix ms): a cell is live while its
// expiry is after now, the row while its marker or any cell is.
func (b *rowBuf) decode(spec *store.TableSpec, now int64) (decoded, error) {
	var d decoded
	d.clustering = make([]any, b.nck)
	for i, c := range spec.Clustering {
		v, err := b.cols[i].value(c.Type)
		if err != nil {
			return d, err
		}
		if v == nil {
			return d, fmt.Errorf("cql: null clustering value")
		}
		d.clustering[i] = v
	}
	m, ok, err := b.cols[b.nck].int64()
	if err != nil {
		return d, err
	}
	if ok && m > now {
		d.live = true
	}
	if ok && m != never {
		d.marker = m
	}
	d.values = make([]any, len(spec.Values))
	for i, col := range spec.Values {
		vc, ec := &b.cols[b.nck+1+2*i], &b.cols[b.nck+2+2*i]
		e, ok, err := ec.int64()
		if err != nil {
			return d, err
		}
		if !ok || e <= now || vc.null {
			continue
		}
		if d.values[i], err = vc.value(col.Type); err != nil {
			return d, err
		}
		d.live = true
	}
	return d, nil
}

// raw fills r with the live cells of the row in b, as store.RawRow wants
// them (the clustering key is encoded by the caller); live reports whether
// the row is live at now.
func (b *rowBuf) raw(spec *store.TableSpec, now int64, r *store.RawRow) (live bool, err error) {
	r.Values = r.Values[:0]
	m, ok, err := b.cols[b.nck].int64()
	if err != nil {
		return false, err
	}
	live = ok && m > now
	r.ExpiresAt = 0
	if ok && m != never {
		r.ExpiresAt = m
	}
	for i := range spec.Values {
		vc, ec := &b.cols[b.nck+1+2*i], &b.cols[b.nck+2+2*i]
		e, ok, err := ec.int64()
		if err != nil {
			return false, err
		}
		if !ok || e <= now || vc.null {
			r.Values = append(r.Values, nil)
			continue
		}
		r.Values = append(r.Values, vc.b)
		live = true
	}
	return live, nil
}

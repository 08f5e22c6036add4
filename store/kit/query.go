package kit

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Query reads a page of rows from st: store.Store.Scan, with every row
// handed out decoded into a store.Row with the table's spec (st.Spec).
// Backends implement only Scan; a caller that wants whole rows reads them
// here. The page holds fewer than q.Limit rows only when the range is
// exhausted, and then its NextPageToken is nil.
//
// A table dropped and created again with another spec between the spec
// lookup and the scan may fail to decode; the error then says so, and a
// retry reads the new spec.
func Query(ctx context.Context, st store.Store, table string, q store.Query) (store.Page, error) {
	if err := store.CheckLimit(q.Limit); err != nil {
		return store.Page{}, err
	}
	spec, err := st.Spec(ctx, table)
	if err != nil {
		return store.Page{}, err
	}
	partition, _, err := ResolvePartition(&spec, q.Partition)
	if err != nil {
		return store.Page{}, err
	}
	d := rowDecoder{a: NewArena(min(q.Limit, 128))}
	page := store.Page{Rows: make([]store.Row, 0, min(q.Limit, 128))}
	next, err := st.Scan(ctx, table, q, func(r *store.RawRow) error {
		row, err := d.decode(&spec, partition, r)
		if err != nil {
			return fmt.Errorf("query %s: %w", table, err)
		}
		page.Rows = append(page.Rows, row)
		return nil
	})
	if err != nil {
		return store.Page{}, err
	}
	page.NextPageToken = next
	return page, nil
}

// rowDecoder decodes RawRows into Rows, in arena memory: a page costs a
// few allocations, not several per row.
type rowDecoder struct {
	a *Arena
}

// decode returns r as a Row of the table spec describes; partition is the
// canonical partition the scan read.
func (d *rowDecoder) decode(spec *store.TableSpec, partition []any, r *store.RawRow) (store.Row, error) {
	ck, err := decodeClustering(spec, r.Clustering, d.a)
	if err != nil {
		return store.Row{}, err
	}
	if len(r.Values) != len(spec.Values) {
		return store.Row{}, store.Errorf(store.ErrInvalid, "row has %d values, the table %d", len(r.Values), len(spec.Values))
	}
	vals := d.a.Take(len(spec.Values))
	for i, c := range spec.Values {
		p := r.Values[i]
		switch {
		case p == nil:
		case c.Type == store.TypeBytes:
			vals[i] = d.a.CopyBytes(p)
		case c.Type == store.TypeText:
			vals[i] = d.a.CopyString(p)
		default:
			if vals[i], err = DecodeRawValue(c.Type, p); err != nil {
				return store.Row{}, fmt.Errorf("column %s: %w", c.Name, err)
			}
		}
	}
	row := store.Row{Partition: partition, Clustering: ck, Values: vals}
	if r.ExpiresAt != 0 {
		row.ExpiresAt = time.UnixMilli(r.ExpiresAt).UTC()
	}
	return row, nil
}

// DecodeRawValue is the canonical value of a store.RawRow payload of a
// column of type t (see RawValue); nil for nil. Bytes are copied, since a
// RawRow's payloads are valid only during the callback.
func DecodeRawValue(t store.Type, p []byte) (any, error) {
	if p == nil {
		return nil, nil
	}
	switch t {
	case store.TypeText:
		return string(p), nil
	case store.TypeBytes:
		return append([]byte{}, p...), nil
	case store.TypeInt64, store.TypeTimestamp:
		if len(p) != 8 {
			return nil, store.Errorf(store.ErrInvalid, "a %s payload of %d bytes", t, len(p))
		}
		n := int64(binary.BigEndian.Uint64(p))
		if t == store.TypeInt64 {
			return n, nil
		}
		return time.UnixMilli(n).UTC(), nil
	}
	return nil, store.Errorf(store.ErrInvalid, "unknown type %s", t)
}

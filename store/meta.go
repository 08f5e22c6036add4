package store

import (
	"context"
	"errors"
	"fmt"
)

// MetaTable is the name of the table that holds ebb's own metadata (index
// configs, list features, logical tables, sweeper watermarks, capacity
// history) in the same Store as the data, so every process pointed at the
// same backend sees the same state and a restart loses nothing.
const MetaTable = "ebb_meta"

// MetaSpec is the schema of MetaTable: documents of one kind per partition,
// sorted by key.
var MetaSpec = TableSpec{
	Name:         MetaTable,
	PartitionKey: []Column{{Name: "kind", Type: TypeText}},
	Clustering:   []Column{{Name: "key", Type: TypeText}},
	Values:       []Column{{Name: "doc", Type: TypeBytes}},
}

// Meta is a small helper over MetaTable. Kinds are owned by one package
// each ("index", "list_feature", "table", "sweeper", ...).
type Meta struct{ S Store }

// Ensure creates MetaTable if needed.
func (m Meta) Ensure(ctx context.Context) error { return m.S.CreateTable(ctx, MetaSpec) }

// Get returns the document stored under (kind, key), or ErrNotFound.
func (m Meta) Get(ctx context.Context, kind, key string) ([]byte, error) {
	row, err := m.S.Get(ctx, MetaTable, []any{kind}, []any{key})
	if err != nil {
		return nil, err
	}
	doc, _ := row.Values[0].([]byte)
	return doc, nil
}

// Put stores a document under (kind, key), replacing any other.
func (m Meta) Put(ctx context.Context, kind, key string, doc []byte) error {
	return m.S.Write(ctx, MetaTable, []Mutation{{
		Partition: []any{kind}, Clustering: []any{key}, NoExpiry: true,
		Cells: []Cell{{Column: "doc", Value: doc}},
	}})
}

// Delete removes the document under (kind, key); missing is not an error.
func (m Meta) Delete(ctx context.Context, kind, key string) error {
	return m.S.Write(ctx, MetaTable, []Mutation{{Kind: DeleteRow, Partition: []any{kind}, Clustering: []any{key}}})
}

// List returns every document of one kind, by key. It scans rather than
// pages through Rows, since a document needs nothing of a Row but its key
// and bytes.
func (m Meta) List(ctx context.Context, kind string) (map[string][]byte, error) {
	out := map[string][]byte{}
	q := Query{Partition: []any{kind}, Limit: MaxLimit}
	for {
		next, err := m.S.Scan(ctx, MetaTable, q, func(r *RawRow) error {
			ck, err := DecodeClustering(&MetaSpec, r.Clustering)
			if err != nil {
				return err
			}
			var doc []byte
			if r.Values[0] != nil {
				doc = append([]byte{}, r.Values[0]...)
			}
			out[ck[0].(string)] = doc
			return nil
		})
		if errors.Is(err, ErrTableNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", kind, err)
		}
		if next == nil {
			return out, nil
		}
		q.PageToken = next
	}
}

// CompareAndSwap replaces the document under (kind, key) with doc only if
// the stored document is exactly old; a nil old means "only if absent".
// When the stored document differs it returns an error wrapping
// ErrConflict and changes nothing. It is atomic on every backend (a
// conditional write), so processes sharing a backend can build leases and
// read-modify-write updates on it.
func (m Meta) CompareAndSwap(ctx context.Context, kind, key string, old, doc []byte) error {
	c := &Condition{Kind: IfAbsent}
	if old != nil {
		c = &Condition{Kind: IfEquals, Column: "doc", Value: old}
	}
	return m.S.Write(ctx, MetaTable, []Mutation{{
		Partition: []any{kind}, Clustering: []any{key}, NoExpiry: true,
		Cells: []Cell{{Column: "doc", Value: doc}}, If: c,
	}})
}

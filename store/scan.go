package store

import (
	"context"
	"encoding/binary"
	"time"
)

// RawRow is one live row as a Scan callback sees it: still encoded, so that
// a hot read path can take what it needs without a Row's allocations. It and
// every slice in it are valid only until the callback returns.
type RawRow struct {
	// Clustering is the row's encoded clustering key (EncodeClustering);
	// DecodeClustering or package keyenc decode it.
	Clustering []byte
	// Values holds one entry per value column, in TableSpec.Values order:
	// the live cell's payload (text and bytes as they are, int64 and
	// timestamps as 8 bytes big-endian, timestamps in Unix milliseconds),
	// or nil where the cell is absent or expired.
	Values [][]byte
}

// Scanner is implemented by backends that can hand out rows without
// materializing them. Scan has Query's semantics (range, order, limit,
// expiry, page token) but calls fn for each row in place of returning a
// page; it returns the page token. An error from fn stops the scan and is
// returned.
type Scanner interface {
	Scan(ctx context.Context, table string, q Query, fn func(*RawRow) error) (next []byte, err error)
}

// Scan reads like Query and calls fn for each row: through the backend's
// Scanner when it has one, otherwise by converting Query's rows (which
// costs a Tables call to learn the clustering order).
func Scan(ctx context.Context, s Store, table string, q Query, fn func(*RawRow) error) ([]byte, error) {
	if sc, ok := s.(Scanner); ok {
		return sc.Scan(ctx, table, q, fn)
	}
	specs, err := s.Tables(ctx, table)
	if err != nil {
		return nil, err
	}
	var spec *TableSpec
	for i := range specs {
		if specs[i].Spec.Name == table {
			spec = &specs[i].Spec
		}
	}
	page, err := s.Query(ctx, table, q)
	if err != nil {
		return nil, err
	}
	if spec == nil { // dropped between the two calls
		return nil, ErrTableNotFound
	}
	return ScanPage(spec, page, fn)
}

// ScanPage calls fn with each row of a page from Query, encoded as a
// RawRow, and returns the page token: Scan for backends whose Query already
// materializes rows and who know the table's spec.
func ScanPage(spec *TableSpec, page Page, fn func(*RawRow) error) ([]byte, error) {
	var raw RawRow
	for _, r := range page.Rows {
		raw.Clustering = EncodeClustering(spec, r.Clustering)
		raw.Values = raw.Values[:0]
		for _, v := range r.Values {
			raw.Values = append(raw.Values, RawValue(v))
		}
		if err := fn(&raw); err != nil {
			return nil, err
		}
	}
	return page.NextPageToken, nil
}

// RawValue is the RawRow encoding of a canonical value; nil for nil.
func RawValue(v any) []byte {
	switch x := v.(type) {
	case string:
		return []byte(x)
	case []byte:
		return x
	case int64:
		return binary.BigEndian.AppendUint64(nil, uint64(x))
	case time.Time:
		return binary.BigEndian.AppendUint64(nil, uint64(x.UnixMilli()))
	}
	return nil
}

package kit

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/ebb-data/ebb/store"
)

// ScanPage calls fn with each row of a page, encoded as a store.RawRow,
// adds each to t when t is not nil (store.Query.Tally), and returns the
// page token: Scan for backends whose reads build Rows and who know the
// table's spec. It stops with ctx's error once ctx is done: fn may be
// slow, and the caller gone.
func ScanPage(ctx context.Context, spec *store.TableSpec, page store.Page, fn func(*store.RawRow) error, t *store.ScanTally) ([]byte, error) {
	var raw store.RawRow
	for _, r := range page.Rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw.Clustering = EncodeClustering(spec, r.Clustering)
		raw.Values = raw.Values[:0]
		for _, v := range r.Values {
			raw.Values = append(raw.Values, RawValue(v))
		}
		raw.ExpiresAt = 0
		if !r.ExpiresAt.IsZero() {
			raw.ExpiresAt = r.ExpiresAt.UnixMilli()
		}
		if t != nil {
			t.Add(&raw)
		}
		if err := fn(&raw); err != nil {
			return nil, err
		}
	}
	return page.NextPageToken, nil
}

// RawValue is the store.RawRow encoding of a canonical value; nil for nil.
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

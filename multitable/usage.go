package multitable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// TableUsage is what one logical table holds.
type TableUsage struct {
	Table
	// Items counts live items.
	Items int64
	// Bytes sums the live items' keys, attribute documents and timestamps
	// (8 bytes each); the store's own overhead is not included.
	Bytes int64
}

// Usage reports every live logical table of st with its item count and
// size. It needs no Registry, so administrative views can call it on any
// Store; it reads each table's listing entries, so its cost grows with
// the number of items.
func Usage(ctx context.Context, st store.Store) ([]TableUsage, error) {
	recs, err := liveRecords(ctx, store.Meta{S: st})
	if err != nil {
		return nil, err
	}
	out := make([]TableUsage, 0, len(recs))
	for _, nr := range recs {
		u := TableUsage{Table: nr.rec.table(nr.name)}
		t := nr.rec.ref(nr.name)
		var last position
		err := walkBuckets(ctx, st, t, nil, func(b int64, _ []bucketRow) error {
			q := store.Query{Partition: t.entryPartition(b), Limit: store.MaxLimit}
			for {
				page, err := kit.Query(ctx, st, ItemsTable, q)
				if err != nil {
					return err
				}
				for _, row := range page.Rows {
					// Entries of one (timestamp, key), left by writes
					// that lost a race, are adjacent: count them once.
					ts, _ := row.Clustering[0].(time.Time)
					key, _ := row.Clustering[1].(string)
					if key == last.key && ts.Equal(last.ts) && !ts.IsZero() {
						continue
					}
					last = position{ts: ts, key: key}
					u.Items++
					if n, ok := row.Values[2].(int64); ok {
						u.Bytes += n
					}
				}
				if page.NextPageToken == nil {
					return nil
				}
				q.PageToken = page.NextPageToken
			}
		})
		if errors.Is(err, store.ErrTableNotFound) {
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("usage of %s: %w", nr.name, err)
		}
		out = append(out, u)
	}
	return out, nil
}

package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// The embedded legacy layout: every event in one partition, clustered by
// (index_id, ts, event_id), so that an index_id's events are one
// clustering range and the whole table one partition to scan. One
// partition is no hot spot on the embedded backend, which is what the
// layout is for.
const (
	tablePartition = "events"
	colPart        = "part"
	colIndexID     = "index_id"
	colTS          = "ts"
	colEventID     = "event_id"
	colPayload     = "payload"
)

// TableSpec returns the embedded legacy layout of a table of that name.
func TableSpec(name string) store.TableSpec {
	return store.TableSpec{
		Name:         name,
		PartitionKey: []store.Column{{Name: colPart, Type: store.TypeText}},
		Clustering: []store.Column{
			{Name: colIndexID, Type: store.TypeText}, {Name: colTS, Type: store.TypeTimestamp}, {Name: colEventID, Type: store.TypeText},
		},
		Values: []store.Column{{Name: colPayload, Type: store.TypeBytes}},
	}
}

// TableSource is a legacy table in the embedded layout (TableSpec), in an
// ebb Store: rows expire by their own expiry, as native TTL.
type TableSource struct {
	st   store.Store
	name string
}

var _ Source = (*TableSource)(nil)

// OpenTable returns the legacy table name of st, creating it (empty) when
// it does not exist. A table of that name with another layout is
// store.ErrTableExists.
func OpenTable(ctx context.Context, st store.Store, name string) (*TableSource, error) {
	if err := st.CreateTable(ctx, TableSpec(name)); err != nil {
		return nil, fmt.Errorf("migrate: legacy table %s: %w", name, err)
	}
	return &TableSource{st: st, name: name}, nil
}

// Query reads one index_id's events; see Source.
func (t *TableSource) Query(ctx context.Context, r Range, _ time.Time) ([]Row, bool, error) {
	q := store.Query{
		Partition: []any{tablePartition},
		Low:       store.Bound{Values: []any{r.IndexID, time.UnixMilli(r.Lo).UTC()}, Inclusive: true},
		High:      store.Bound{Values: []any{r.IndexID}, Inclusive: true},
		Reverse:   r.Desc,
		Limit:     r.Limit,
	}
	if r.Hi < maxMs {
		q.High = store.Bound{Values: []any{r.IndexID, time.UnixMilli(r.Hi).UTC()}}
	}
	if a := r.After; a != nil {
		b := store.Bound{Values: []any{r.IndexID, a.Timestamp.UTC(), a.EventID}}
		if r.Desc {
			q.High = b
		} else {
			q.Low = b
		}
	}
	page, err := kit.Query(ctx, t.st, t.name, q)
	if err != nil {
		return nil, false, fmt.Errorf("migrate: query legacy table %s: %w", t.name, err)
	}
	rows := make([]Row, len(page.Rows))
	for i, sr := range page.Rows {
		rows[i] = tableRow(sr)
	}
	return rows, page.NextPageToken != nil, nil
}

// maxMs is past every timestamp an index holds (year 10000).
var maxMs = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

func tableRow(sr store.Row) Row {
	var r Row
	r.IndexID, _ = sr.Clustering[0].(string)
	r.Timestamp, _ = sr.Clustering[1].(time.Time)
	r.EventID, _ = sr.Clustering[2].(string)
	r.Payload, _ = sr.Values[0].([]byte)
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	r.ExpiresAt = sr.ExpiresAt
	return r
}

// Write upserts rows with their expiry; see Source.
func (t *TableSource) Write(ctx context.Context, rows []Row) error {
	const chunk = 1000
	for lo := 0; lo < len(rows); lo += chunk {
		batch := rows[lo:min(lo+chunk, len(rows))]
		muts := make([]store.Mutation, len(batch))
		for i, r := range batch {
			payload := r.Payload
			if payload == nil {
				payload = []byte{}
			}
			muts[i] = store.Mutation{
				Partition:  []any{tablePartition},
				Clustering: []any{r.IndexID, r.Timestamp.UTC().Truncate(time.Millisecond), r.EventID},
				Cells:      []store.Cell{{Column: colPayload, Value: payload}},
				ExpiresAt:  r.ExpiresAt,
				NoExpiry:   r.ExpiresAt.IsZero(),
			}
		}
		if err := t.st.Write(ctx, t.name, muts); err != nil {
			return fmt.Errorf("migrate: write legacy table %s: %w", t.name, err)
		}
	}
	return nil
}

// Scan pages through the table in (index_id, timestamp, event_id) order.
// The store hides expired rows, so every row scanned is live when read.
func (t *TableSource) Scan(ctx context.Context, cursor []byte, limit int) ([]Row, []byte, float64, error) {
	page, err := kit.Query(ctx, t.st, t.name, store.Query{Partition: []any{tablePartition}, Limit: limit, PageToken: cursor})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("migrate: scan legacy table %s: %w", t.name, err)
	}
	rows := make([]Row, len(page.Rows))
	for i, sr := range page.Rows {
		rows[i] = tableRow(sr)
	}
	return rows, page.NextPageToken, float64(len(rows)), nil
}

// Estimate returns the rows the table physically holds.
func (t *TableSource) Estimate(ctx context.Context) (int64, error) {
	st, err := t.st.Stats(ctx, t.name)
	if errors.Is(err, store.ErrTableNotFound) {
		return 0, nil
	}
	return st.Rows, err
}

// checkTableName refuses an embedded legacy table name that an index's
// shards or ebb's own tables could own.
func checkTableName(name string) error {
	if strings.HasPrefix(name, "ebb") || strings.HasPrefix(name, "list_") {
		return store.Errorf(store.ErrInvalid, "legacy table %q: names starting ebb or list_ are ebb's own", name)
	}
	return nil
}

package cql

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ebb-data/ebb/store/kit"
)

// Indexes are not Cassandra secondary indexes (which are per node,
// eventually consistent and scale badly with partition count) but a
// companion table per ebb table, "ebb__ix_<digest of the name>":
//
//	PRIMARY KEY ((<partition key>), "_i", "_v", <clustering key>)
//	"_e" bigint: the indexed cell's expiry
//
// with "_i" the index's position in the spec and "_v" the value's raw
// bytes (a digest for long values, see indexKey). It has the data table's
// partition key, so an upsert's row and its entries are one storage
// mutation. An entry is written with every upsert of an indexed cell and
// is never updated in place: an update, delete or expiry of the cell
// leaves it behind. A lookup therefore reads the entries of (partition,
// index, value) (in clustering order, since the clustering key follows the
// value) and verifies each against the row: the cell must be live and hold
// the value. A leftover entry is never returned.
//
// Leftovers are cleaned up when found: a lookup deletes a stale entry with
// a tombstone at the entry's own write time, which cannot remove a newer
// write of the same entry. Entries younger than cleanupGrace are left
// alone, in case the write that makes them current is still on its way to
// some replicas. Entries also carry their cell's TTL, and DeleteIfExpired
// and DeletePartition remove them with their rows.

// cleanupGrace is the age (by write time) below which a stale entry is not
// cleaned up.
const cleanupGrace = 10 * time.Minute

// QueryIndex returns the clustering keys of the live rows of a partition
// whose indexed column equals value; see store.Store.
func (s *Store) QueryIndex(ctx context.Context, name, index string, partition []any, value any) (_ [][]any, err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer s.observe("query_index", timeNow(), &err)
	sc, err := s.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	spec := &sc.spec
	col, v, _, err := kit.ResolveIndexLookup(spec, index, partition, value)
	if err != nil {
		return nil, err
	}
	p, _, err := kit.ResolvePartition(spec, partition)
	if err != nil {
		return nil, err
	}
	ix, raw, now := indexOf(spec, col), kit.RawValue(v), s.now().UnixMilli()
	cands, err := s.indexEntries(ctx, sc, p, ix, indexKey(raw), now)
	if err != nil {
		return nil, s.tableErr(ctx, sc, "query index of", err)
	}
	live := map[string]bool{}
	for chunk := range slices.Chunk(cands, dieReadChunk) {
		keys := make([][]any, len(chunk))
		for i := range chunk {
			keys[i] = chunk[i].ck
		}
		if err := s.verifyEntries(ctx, sc, p, col, raw, keys, now, live); err != nil {
			return nil, s.tableErr(ctx, sc, "query index of", err)
		}
	}
	out := [][]any{}
	var stale []stmt
	oldest := s.stamps.wall().Add(-cleanupGrace).UnixMicro()
	for _, c := range cands {
		if live[string(kit.EncodeClustering(spec, c.ck))] {
			out = append(out, c.ck)
		} else if c.wt < oldest {
			stale = append(stale, deleteIndexEntryStmt(sc, p, ix, indexKey(raw), c.ck, c.wt))
		}
	}
	if len(stale) > 0 {
		// Best effort: a lookup that found its answer does not fail for
		// the cleanup.
		for chunk := range slices.Chunk(stale, s.provider.batchStatements()) {
			if err := s.exec(ctx, chunk); err != nil {
				s.log.Debug("cql: index cleanup failed", "table", name, "index", index, "err", err)
				break
			}
		}
	}
	return out, nil
}

// candidate is an index entry that has not expired.
type candidate struct {
	ck []any
	wt int64 // the entry's write time, Unix µs
}

// indexEntries reads the unexpired entries of one value, in clustering
// order.
func (s *Store) indexEntries(ctx context.Context, sc *schema, p []any, ix int, raw []byte, now int64) ([]candidate, error) {
	st := indexLookupStmt(sc, p, ix, raw)
	var out []candidate
	err := s.retry.do(ctx, true, func(ctx context.Context) error {
		out = out[:0]
		n := len(sc.spec.Clustering)
		cols := make([]rawCol, n+2)
		dest := make([]any, len(cols))
		for i := range cols {
			dest[i] = &cols[i]
		}
		iter := s.session.Query(st.cql, st.args...).Idempotent(true).PageSize(1000).IterContext(ctx)
		for iter.Scan(dest...) {
			if err := ctx.Err(); err != nil {
				_ = iter.Close()
				return err
			}
			exp, ok, err := cols[n].int64()
			if err == nil && ok && exp <= now {
				continue // expired with its cell; its TTL removes it
			}
			wt, _, werr := cols[n+1].int64()
			ck := make([]any, n)
			for i, c := range sc.spec.Clustering {
				if ck[i], err = cols[i].value(c.Type); err != nil {
					break
				}
			}
			if err == nil {
				err = werr
			}
			if err != nil {
				_ = iter.Close()
				return fmt.Errorf("cql: index entry: %w", err)
			}
			out = append(out, candidate{ck: ck, wt: wt})
		}
		return iter.Close()
	})
	return out, err
}

// verifyEntries reads the indexed cell of candidate rows and marks, in
// live, the encoded clustering keys of those whose cell is live at now and
// holds raw.
func (s *Store) verifyEntries(ctx context.Context, sc *schema, p []any, col int, raw []byte, keys [][]any, now int64, live map[string]bool) error {
	st := indexVerifyStmt(sc, p, col, keys)
	return s.retry.do(ctx, true, func(ctx context.Context) error {
		n := len(sc.spec.Clustering)
		cols := make([]rawCol, n+2)
		dest := make([]any, len(cols))
		for i := range cols {
			dest[i] = &cols[i]
		}
		iter := s.session.Query(st.cql, st.args...).Idempotent(true).IterContext(ctx)
		for iter.Scan(dest...) {
			exp, ok, err := cols[n+1].int64()
			if err != nil {
				_ = iter.Close()
				return err
			}
			if !ok || exp <= now || cols[n].null || !bytes.Equal(cols[n].b, raw) {
				continue
			}
			ck := make([]any, n)
			for i, c := range sc.spec.Clustering {
				if ck[i], err = cols[i].value(c.Type); err != nil {
					_ = iter.Close()
					return err
				}
			}
			live[string(kit.EncodeClustering(&sc.spec, ck))] = true
		}
		return iter.Close()
	})
}

package cql

import (
	"context"
	"slices"
	"sync"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/remote"
)

// DeleteIfExpired must never delete a row whose expiry was extended, and
// must be atomic with respect to concurrent upserts of the row. It reads
// the row's marker and value expiries with their write times, decides on
// ebb's clock, and deletes a row found expired with a row tombstone whose
// timestamp is the newest write time it read (USING TIMESTAMP): the
// tombstone removes exactly the versions that were seen expired, and any
// write stamped after them, landing before or after the delete, survives.
//
// A lightweight transaction (DELETE … IF) was the other candidate and is
// worse here: its tombstone carries the Paxos ballot's timestamp, later
// than a concurrent plain upsert stamped just before it, so a revived row
// written by an ordinary Write in that window would be deleted. Only a
// write stamped earlier than a version the read saw, yet delivered after
// the read, can be removed by the timestamped delete: that is the ordinary
// last-write-wins window of any Cassandra update, and it needs a second
// writer racing on the same row with timestamps out of delivery order.
//
// Cost: one read per partition (the rows of a partition are read together,
// by up to 100 clustering keys a query) and the deletes in the phase's
// batch, where an LWT would cost four round trips per row. The indexed
// values are read too, so their companion entries go with the row.

// dieReadChunk bounds the keys of one IN read (Keyspaces' limit of
// subqueries per IN).
const dieReadChunk = 100

// deleteIfExpired reads the rows of the DeleteIfExpired mutations (indexes
// into rs, by partition key) and returns, by partition key, the statements
// deleting those found expired at now (Unix ms).
func (s *Store) deleteIfExpired(ctx context.Context, sc *schema, rs []kit.ResolvedMutation, dies map[string][]int, now int64) (map[string][]stmt, error) {
	var mu sync.Mutex
	out := map[string][]stmt{}
	var tasks []func(context.Context) error
	for pk, idx := range dies {
		partition := rs[idx[0]].Partition
		var keys [][]any
		seen := map[string]bool{}
		for _, i := range idx {
			if !seen[string(rs[i].ClusteringKey)] {
				seen[string(rs[i].ClusteringKey)] = true
				keys = append(keys, rs[i].Clustering)
			}
		}
		for chunk := range slices.Chunk(keys, dieReadChunk) {
			tasks = append(tasks, func(ctx context.Context) error {
				stmts, err := s.readExpired(ctx, sc, partition, chunk, now)
				if err != nil {
					return err
				}
				mu.Lock()
				out[pk] = append(out[pk], stmts...)
				mu.Unlock()
				return nil
			})
		}
	}
	if err := remote.RunAll(ctx, tasks); err != nil {
		return nil, err
	}
	return out, nil
}

// observed is a row as expiryReadStmt reads it.
type observed struct {
	cols []rawCol
	dest []any
	nck  int
	nval int
}

func newObserved(spec *store.TableSpec) *observed {
	n := len(spec.Clustering) + 2 + 2*len(spec.Values) + len(spec.Indexes)
	o := &observed{cols: make([]rawCol, n), dest: make([]any, n), nck: len(spec.Clustering), nval: len(spec.Values)}
	for i := range o.cols {
		o.dest[i] = &o.cols[i]
	}
	return o
}

// expiry returns part i's expiry column (0: the marker, 1+j: value j) and
// its write time; ok is false when the part is absent.
func (o *observed) expiry(i int) (exp, wt int64, ok bool, err error) {
	c := o.nck + 2*i
	if exp, ok, err = o.cols[c].int64(); err != nil || !ok {
		return 0, 0, false, err
	}
	wt, _, err = o.cols[c+1].int64()
	return exp, wt, true, err
}

// indexed returns the raw value of the column of index j, nil when absent.
func (o *observed) indexed(j int) []byte {
	c := &o.cols[o.nck+2+2*o.nval+j]
	if c.null {
		return nil
	}
	return c.b
}

// readExpired reads some rows of one partition and returns the statements
// deleting those with no live part at now.
func (s *Store) readExpired(ctx context.Context, sc *schema, partition []any, keys [][]any, now int64) ([]stmt, error) {
	st := expiryReadStmt(sc, partition, keys)
	var out []stmt
	err := s.retry.do(ctx, true, func(ctx context.Context) error {
		out = out[:0]
		o := newObserved(&sc.spec)
		iter := s.session.Query(st.cql, st.args...).Idempotent(true).IterContext(ctx)
		for iter.Scan(o.dest...) {
			stmts, err := expiredRowStmts(sc, o, partition, now)
			if err != nil {
				_ = iter.Close()
				return err
			}
			out = append(out, stmts...)
		}
		return iter.Close()
	})
	return out, err
}

// expiredRowStmts decides on one observed row: if no part of it is live at
// now, the statements deleting it and its index entries at the newest
// write time read.
func expiredRowStmts(sc *schema, o *observed, partition []any, now int64) ([]stmt, error) {
	var newest int64
	seen := false
	for i := 0; i <= o.nval; i++ {
		exp, wt, ok, err := o.expiry(i)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if exp > now {
			return nil, nil // live: the row survives
		}
		seen = true
		newest = max(newest, wt)
	}
	if !seen {
		return nil, nil
	}
	ck := make([]any, o.nck)
	for i, c := range sc.spec.Clustering {
		v, err := o.cols[i].value(c.Type)
		if err != nil {
			return nil, err
		}
		ck[i] = v
	}
	out := []stmt{deleteObservedStmt(sc, partition, ck, newest)}
	for j := range sc.spec.Indexes {
		if raw := o.indexed(j); raw != nil {
			out = append(out, deleteIndexEntryStmt(sc, partition, j, indexKey(slices.Clone(raw)), ck, newest))
		}
	}
	return out, nil
}

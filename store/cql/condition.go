package cql

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Conditional mutations are lightweight transactions (IF clauses, Paxos at
// LOCAL_SERIAL), so the condition is evaluated and the write applied
// atomically with respect to every other conditional writer of the row.
// "Live" means live by ebb's expiry columns, not by CQL's idea of a row:
//
//   - IfEquals(col, v) is one LWT: IF "col" = v AND "_e_col" > now. A null
//     (absent) cell fails both comparisons, an expired one the second.
//   - IfAbsent and IfExists depend on the marker and every value's expiry
//     ("live" is an OR over them, and a null must count as expired), which
//     an IF clause (a conjunction, where null fails every inequality)
//     cannot say. They are a compare-and-set on a snapshot of those expiry
//     columns: the condition is decided on the snapshot at now, and the
//     write carries IF "_x" = ? AND "_e_v" = ? … with the snapshot's values
//     (= null for an absent part), so it applies only if no expiry changed
//     since. When it does not apply, the cluster returns the current
//     values, which are the next snapshot. IfAbsent starts from the guess
//     "no row at all" (one LWT for a fresh key, the lease case); IfExists
//     starts from a LOCAL_SERIAL read. A snapshot that came from the
//     cluster and fails the condition is a conflict.
//
// Index entries of a conditional upsert are written first, with a plain
// write: an LWT batch cannot span two tables, and an entry whose write then
// fails or is refused is a stale entry, which lookups verify away.

// casAttempts bounds the compare-and-set rounds of IfAbsent and IfExists
// when the row's expiries keep changing under them.
const casAttempts = 8

// equalsCond is the IF clause of IfEquals.
func equalsCond(sc *schema, c *kit.ResolvedCondition, now int64) stmt {
	name := sc.spec.Values[c.Col].Name
	return stmt{fmt.Sprintf(" IF %s = ? AND %s > ?", quote(name), quote(expCol(name))), []any{bindValue(c.Value), now}}
}

// expiryCols are the columns a snapshot holds: the marker, then each
// value's expiry.
func expiryCols(sc *schema) []string {
	cols := []string{colMarker}
	for _, v := range sc.spec.Values {
		cols = append(cols, expCol(v.Name))
	}
	return cols
}

// snapshotCond is the IF clause pinning every expiry column to snap (nil
// entries are "= null").
func snapshotCond(sc *schema, snap []any) stmt {
	var conds []string
	for _, c := range expiryCols(sc) {
		conds = append(conds, quote(c)+" = ?")
	}
	return stmt{" IF " + strings.Join(conds, " AND "), snap}
}

// snapshotReadStmt reads the expiry columns of one row.
func snapshotReadStmt(sc *schema, partition, clustering []any) stmt {
	var cols []string
	for _, c := range expiryCols(sc) {
		cols = append(cols, quote(c))
	}
	return stmt{fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), sc.data, sc.rowWhere),
		appendKey(appendKey(nil, partition), clustering)}
}

// snapshotLive reports whether a snapshot has a live part at now.
func snapshotLive(snap []any, now int64) bool {
	for _, v := range snap {
		if e, ok := v.(int64); ok && e > now {
			return true
		}
	}
	return false
}

// snapshotFrom reads a snapshot out of a CAS result row. An expiry is never
// 0 (expiries are after 1970), so the driver's 0 for a null is absent.
func snapshotFrom(sc *schema, row map[string]any) []any {
	cols := expiryCols(sc)
	snap := make([]any, len(cols))
	for i, c := range cols {
		if e, ok := row[c].(int64); ok && e != 0 {
			snap[i] = e
		}
	}
	return snap
}

// conditional applies the one conditional mutation of a batch.
func (s *Store) conditional(ctx context.Context, sc *schema, r *kit.ResolvedMutation) error {
	now := s.now().UnixMilli()
	w := writeParams{ts: s.stamps.next(1), now: now, margin: s.opts.TTLMargin.Milliseconds(), cap: s.ttlCap}
	if r.Kind == store.Upsert {
		if entries := indexEntryStmts(sc, r, w); len(entries) > 0 {
			if err := s.exec(ctx, entries); err != nil {
				return s.tableErr(ctx, sc, "write", err)
			}
		}
	}
	conflict := &store.MutationError{Index: 0, Err: store.ErrConflict}
	if r.Cond.Kind == store.IfEquals {
		cond := equalsCond(sc, r.Cond, now)
		applied, _, err := s.cas(ctx, sc, r, w, &cond)
		if err != nil {
			return s.tableErr(ctx, sc, "write", err)
		}
		if !applied {
			return conflict
		}
		return nil
	}
	snap := make([]any, len(sc.spec.Values)+1)
	fromCluster := false
	if r.Cond.Kind == store.IfExists {
		var err error
		if snap, err = s.readSnapshot(ctx, sc, r); err != nil {
			return s.tableErr(ctx, sc, "write", err)
		}
		fromCluster = true
	}
	for range casAttempts {
		if fromCluster && snapshotLive(snap, now) != (r.Cond.Kind == store.IfExists) {
			return conflict
		}
		cond := snapshotCond(sc, snap)
		applied, cur, err := s.cas(ctx, sc, r, w, &cond)
		if err != nil {
			return s.tableErr(ctx, sc, "write", err)
		}
		if applied {
			return nil
		}
		snap, fromCluster = snapshotFrom(sc, cur), true
	}
	return store.Errorf(store.ErrUnavailable, "write %s: the row's expiries changed under %d conditional writes", sc.spec.Name, casAttempts)
}

// readSnapshot reads a row's expiry columns with a linearizable
// (LOCAL_SERIAL) read; all nil when the row does not exist.
func (s *Store) readSnapshot(ctx context.Context, sc *schema, r *kit.ResolvedMutation) ([]any, error) {
	st := snapshotReadStmt(sc, r.Partition, r.Clustering)
	snap := make([]any, len(sc.spec.Values)+1)
	err := s.retry.do(ctx, true, func(ctx context.Context) error {
		cols := make([]rawCol, len(snap))
		dest := make([]any, len(snap))
		for i := range cols {
			dest[i] = &cols[i]
		}
		err := s.session.Query(st.cql, st.args...).Consistency(gocql.LocalSerial).ScanContext(ctx, dest...)
		if errors.Is(err, gocql.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range cols {
			e, ok, err := cols[i].int64()
			if err != nil {
				return err
			}
			if ok {
				snap[i] = e
			}
		}
		return nil
	})
	return snap, err
}

// cas sends the mutation with an IF clause and reports whether it applied,
// with the row's current values of the condition's columns when it did
// not. A timeout leaves the outcome unknown: it is not retried, and maps to
// store.ErrUnavailable.
func (s *Store) cas(ctx context.Context, sc *schema, r *kit.ResolvedMutation, w writeParams, cond *stmt) (bool, map[string]any, error) {
	var stmts []stmt
	switch r.Kind {
	case store.Upsert:
		stmts = upsertStmts(sc, r, w, cond)
	case store.DeleteRow:
		stmts = []stmt{deleteRowStmt(sc, r, 0, cond)}
	case store.DeleteCells:
		stmts = []stmt{deleteCellsStmt(sc, r, 0, cond)}
	default:
		return false, nil, store.Errorf(store.ErrInvalid, "a conditional mutation must be an Upsert, DeleteRow or DeleteCells")
	}
	var applied bool
	var cur map[string]any
	err := s.retry.do(ctx, false, func(ctx context.Context) error {
		cur = map[string]any{}
		var err error
		if len(stmts) == 1 {
			applied, err = s.session.Query(stmts[0].cql, stmts[0].args...).MapScanCASContext(ctx, cur)
			return err
		}
		b := s.session.Batch(gocql.LoggedBatch)
		for _, st := range stmts {
			b.Query(st.cql, st.args...)
		}
		var iter *gocql.Iter
		applied, iter, err = b.MapExecCASContext(ctx, cur)
		if iter != nil {
			if cerr := iter.Close(); err == nil {
				err = cerr
			}
		}
		return err
	})
	return applied, cur, err
}

package cql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
		applied, _, err := s.casSettled(ctx, sc, r, w, &cond)
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
		applied, cur, err := s.casSettled(ctx, sc, r, w, &cond)
		if err != nil {
			return s.tableErr(ctx, sc, "write", err)
		}
		if applied {
			return nil
		}
		if cur == nil {
			// Settled as not applied after an unknown outcome: the
			// condition no longer held, or another writer won.
			return conflict
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

// Outcomes left unknown. A lightweight transaction can end without the
// cluster knowing whether it applied: Cassandra answers a write timeout of
// write type CAS (a Paxos phase, prepare or propose, timed out: the
// proposal may have been accepted by fewer replicas than a quorum, which
// a later round may still complete) or, on protocol v5, CAS_WRITE_UNKNOWN
// ("CAS operation result is unknown - proposal accepted by 1 but not a
// quorum", which contention between writers of one row produces on three
// replicas). A write timeout of write type SIMPLE on a conditional write
// is the commit phase timing out after a quorum accepted: the write is
// decided and any later Paxos round completes it. A timeout of the
// driver's own (no answer at all) tells nothing either. In every case a
// linearizable read of the row settles the outcome: since CASSANDRA-12126
// (Cassandra 3.0.24, 3.11.10, 4.0; apache/cassandra pull request 496,
// "SERIAL reads commit an empty commit") a SERIAL or LOCAL_SERIAL read
// runs a Paxos round of its own that either completes an accepted
// proposal it finds or commits an empty one with a newer ballot, after
// which an older proposal can never be committed (the scenario of
// scylladb/scylladb issue 6299). What the read returns is then final for
// the write that timed out.
//
// To recognise its own write in that read, a conditional upsert on
// Cassandra and ScyllaDB adds a random tag to the row's "_w" set, in the
// same Paxos round, with a TTL of its own (tagTTL): the values alone would
// not do, since two writers racing to increment a counter write the same
// value and only one of them applied. A later conditional write adds its
// own tag beside it, so a tag survives the writes that follow until the
// read. A conditional delete is recognised by its effect: the row, or the
// deleted cells, are gone. A table created before "_w" existed, and
// Keyspaces (whose LWTs are not Paxos rounds the driver can finish this
// way), keep the unknown outcome: store.ErrUnavailable.

// tagTTL is how long a conditional upsert's tag stays in the row: longer
// than any operation that may still read it back (Options.Timeout bounds
// one), and short enough that the set of a row written often, such as a
// lease, stays small.
func (s *Store) tagTTL() int64 {
	return int64(max(2*s.opts.Timeout, time.Minute) / time.Second)
}

// tagStmt adds tag to the row's "_w" set with its own TTL; it joins the
// conditional upsert's batch, so it applies exactly when the upsert does.
func tagStmt(sc *schema, r *kit.ResolvedMutation, tag gocql.UUID, ttl int64) stmt {
	args := appendKey([]any{ttl, []gocql.UUID{tag}}, r.Partition)
	return stmt{fmt.Sprintf("UPDATE %s USING TTL ? SET %s = %s + ? WHERE %s", sc.data, quote(colTag), quote(colTag), sc.rowWhere),
		appendKey(args, r.Clustering)}
}

// outcomeUnknown reports whether a conditional write's error leaves open
// whether it applied.
func outcomeUnknown(err error) bool {
	switch classify(err) {
	case kindCASUnknown, kindWriteTimeout:
		return true
	}
	return errors.Is(err, gocql.ErrTimeoutNoResponse)
}

// casSettled runs cas and settles an unknown outcome with a LOCAL_SERIAL
// read of the row (see above). When it settled the outcome that way, the
// current values are nil. It returns store.ErrUnavailable only when the
// outcome stays unknown: the settling read failed too, or the write cannot
// be recognised.
func (s *Store) casSettled(ctx context.Context, sc *schema, r *kit.ResolvedMutation, w writeParams, cond *stmt) (bool, map[string]any, error) {
	var tag gocql.UUID
	if r.Kind == store.Upsert && s.provider != Keyspaces && !sc.untagged.Load() {
		var err error
		if tag, err = gocql.RandomUUID(); err != nil {
			return false, nil, fmt.Errorf("cql: conditional write tag: %w", err)
		}
	}
	applied, cur, err := s.cas(ctx, sc, r, w, cond, tag)
	var inv *gocql.RequestErrInvalid
	if tag != (gocql.UUID{}) && errors.As(err, &inv) && strings.Contains(inv.Message(), colTag) {
		// A table created before conditional upserts were tagged: it
		// has no "_w" column, and the cluster refused the whole batch.
		sc.untagged.Store(true)
		tag = gocql.UUID{}
		applied, cur, err = s.cas(ctx, sc, r, w, cond, tag)
	}
	if err == nil || !outcomeUnknown(err) {
		return applied, cur, err
	}
	if r.Kind == store.Upsert && tag == (gocql.UUID{}) {
		return false, nil, err
	}
	applied, serr := s.settle(ctx, sc, r, tag)
	if serr != nil {
		return false, nil, store.Wrapf(store.ErrUnavailable, errors.Join(err, serr),
			"write %s: the conditional write's outcome is unknown, and the read that would settle it failed", sc.spec.Name)
	}
	return applied, nil, nil
}

// settle reads the row at LOCAL_SERIAL, which decides any Paxos round
// still open on it, and reports whether the conditional write applied: an
// upsert by its tag in "_w", a DeleteRow by the row's absence, a
// DeleteCells by its cells' absence.
func (s *Store) settle(ctx context.Context, sc *schema, r *kit.ResolvedMutation, tag gocql.UUID) (bool, error) {
	if r.Kind == store.Upsert {
		st := stmt{fmt.Sprintf("SELECT %s FROM %s WHERE %s", quote(colTag), sc.data, sc.rowWhere),
			appendKey(appendKey(nil, r.Partition), r.Clustering)}
		var tags []gocql.UUID
		err := s.retry.do(ctx, true, func(ctx context.Context) error {
			tags = nil
			err := s.session.Query(st.cql, st.args...).Consistency(gocql.LocalSerial).ScanContext(ctx, &tags)
			if errors.Is(err, gocql.ErrNotFound) {
				return nil
			}
			return err
		})
		return slices.Contains(tags, tag), err
	}
	snap, err := s.readSnapshot(ctx, sc, r)
	if err != nil {
		return false, err
	}
	// snap holds the marker's expiry, then each value's.
	gone := func(i int) bool { return snap[i] == nil }
	if r.Kind == store.DeleteRow {
		for i := range snap {
			if !gone(i) {
				return false, nil
			}
		}
		return true, nil
	}
	for _, c := range r.Cells {
		if !gone(c.Col + 1) {
			return false, nil
		}
	}
	return true, nil
}

// cas sends the mutation with an IF clause, with tag (when not zero) added
// to the row's "_w" in the same round, and reports whether it applied,
// with the row's current values of the condition's columns when it did
// not. It is not retried where it may have applied (an unknown outcome,
// see above), which casSettled settles.
func (s *Store) cas(ctx context.Context, sc *schema, r *kit.ResolvedMutation, w writeParams, cond *stmt, tag gocql.UUID) (bool, map[string]any, error) {
	var stmts []stmt
	switch r.Kind {
	case store.Upsert:
		stmts = upsertStmts(sc, r, w, cond)
		if tag != (gocql.UUID{}) {
			stmts = append(stmts, tagStmt(sc, r, tag, s.tagTTL()))
		}
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
		} else {
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
		}
		if errors.Is(err, gocql.ErrTimeoutNoResponse) {
			// The request may have reached the cluster: sending it
			// again could apply it twice.
			return fmt.Errorf("%w: %w", errNoRetry, err)
		}
		return err
	})
	return applied, cur, err
}

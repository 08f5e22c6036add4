package cql

import (
	"context"
	"fmt"
	"slices"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/remote"
)

// Writes. A batch is validated whole with kit.ResolveBatch, then every
// mutation becomes one or more statements (stmt.go), each carrying an
// explicit write timestamp: the batch reserves consecutive timestamps and
// mutation i gets the i-th, so "a later mutation of the same row wins" is
// last-write-wins itself, with no folding, and re-sending a statement after
// a timeout stores exactly the same cells (writes are idempotent).
//
// Statements are grouped by partition. The statements of one partition go
// out as one batch: a row and its companion index entries share the
// partition key, so the whole batch is a single storage mutation, which
// Cassandra and ScyllaDB apply atomically and in isolation, without a
// batch log and without the size limits of multi-partition batches. A
// single-partition Write of at most MaxAtomicBatch mutations is therefore
// atomic; larger ones are sent in chunks, and partitions in parallel.
//
// DeleteIfExpired reads the rows first (see deleteIfExpired); when a batch
// also wrote the row earlier, the batch is cut into phases so the read sees
// those writes.

// Write applies a batch; see store.Store.
func (s *Store) Write(ctx context.Context, name string, batch []store.Mutation) (err error) {
	ctx, cancel, done, err := s.core.BeginWrite(ctx, len(batch))
	if done || err != nil {
		return err
	}
	defer cancel()
	defer s.observe("write", timeNow(), &err)
	now := s.now()
	sc, rs, err := remote.Resolve(ctx, s.tables, name, batch, now, s.caps.MaxRowBytes)
	if err != nil {
		return err
	}
	if len(rs) == 1 && rs[0].Cond != nil {
		return s.conditional(ctx, sc, &rs[0])
	}
	w := writeParams{ts: s.stamps.next(len(rs)), now: now.UnixMilli(), margin: s.opts.TTLMargin.Milliseconds(), cap: s.ttlCap}
	phases := splitPhases(rs)
	atomic := len(phases) == 1 && len(rs) <= s.caps.MaxAtomicBatch && samePartition(rs)
	for _, ph := range phases {
		parts, err := s.phaseStatements(ctx, sc, rs, ph, w)
		if err != nil {
			return s.tableErr(ctx, sc, "write", err)
		}
		if atomic {
			if err := s.checkAtomic(rs, parts); err != nil {
				return err
			}
		}
		if err := s.send(ctx, parts, atomic); err != nil {
			return s.tableErr(ctx, sc, "write", err)
		}
	}
	return nil
}

func samePartition(rs []kit.ResolvedMutation) bool {
	for i := range rs {
		if string(rs[i].PartitionKey) != string(rs[0].PartitionKey) {
			return false
		}
	}
	return true
}

// splitPhases cuts a batch where a DeleteIfExpired follows another
// mutation of the same row: its read must see that mutation applied. A
// mutation after a DeleteIfExpired needs no cut: the delete carries the
// timestamp of what it read, which is older than any timestamp of this
// batch, so the later mutation wins anyway.
func splitPhases(rs []kit.ResolvedMutation) [][]int {
	var phases [][]int
	var cur []int
	written := map[string]bool{}
	for i := range rs {
		k := string(rs[i].PartitionKey) + "\x00" + string(rs[i].ClusteringKey)
		if rs[i].Kind == store.DeleteIfExpired && written[k] {
			phases = append(phases, cur)
			cur, written = nil, map[string]bool{}
		}
		if rs[i].Kind != store.DeleteIfExpired {
			written[k] = true
		}
		cur = append(cur, i)
	}
	return append(phases, cur)
}

// partStmts is the statements of one partition, with the index of the last
// mutation each came from (for errors).
type partStmts struct {
	stmts []stmt
	from  []int
}

// phaseStatements renders one phase, grouped by partition in order of
// first appearance.
func (s *Store) phaseStatements(ctx context.Context, sc *schema, rs []kit.ResolvedMutation, ph []int, w writeParams) ([]*partStmts, error) {
	var order []*partStmts
	byPart := map[string]*partStmts{}
	part := func(r *kit.ResolvedMutation) *partStmts {
		p, ok := byPart[string(r.PartitionKey)]
		if !ok {
			p = &partStmts{}
			byPart[string(r.PartitionKey)] = p
			order = append(order, p)
		}
		return p
	}
	// Rows to delete if expired, by partition.
	dies := map[string][]int{}
	for _, i := range ph {
		if rs[i].Kind == store.DeleteIfExpired {
			dies[string(rs[i].PartitionKey)] = append(dies[string(rs[i].PartitionKey)], i)
			part(&rs[i]) // keep the partition's place in the order
		}
	}
	var dieStmts map[string][]stmt
	if len(dies) > 0 {
		var err error
		if dieStmts, err = s.deleteIfExpired(ctx, sc, rs, dies, w.now); err != nil {
			return nil, err
		}
	}
	for _, i := range ph {
		r := &rs[i]
		p := part(r)
		wi := w
		wi.ts = w.ts + int64(i)
		var out []stmt
		switch r.Kind {
		case store.Upsert:
			out = upsertStmts(sc, r, wi, nil)
		case store.DeleteRow:
			out = []stmt{deleteRowStmt(sc, r, wi.ts, nil)}
		case store.DeleteCells:
			out = []stmt{deleteCellsStmt(sc, r, wi.ts, nil)}
		case store.DeleteIfExpired:
			out, dieStmts[string(r.PartitionKey)] = dieStmts[string(r.PartitionKey)], nil
		}
		for _, st := range out {
			p.stmts = append(p.stmts, st)
			p.from = append(p.from, i)
		}
	}
	return order, nil
}

// checkAtomic refuses an atomic batch the cluster could not apply as one:
// over Keyspaces' statement limit, or over the size of one mutation.
func (s *Store) checkAtomic(rs []kit.ResolvedMutation, parts []*partStmts) error {
	for _, p := range parts {
		if n := len(p.stmts); n > s.provider.batchStatements() && s.provider == Keyspaces {
			return &store.MutationError{Index: p.from[s.provider.batchStatements()], Err: fmt.Errorf(
				"%w: the batch needs %d statements, Keyspaces applies at most %d atomically", store.ErrTooLarge, n, keyspacesBatchStatements)}
		}
	}
	size := 0
	for i := range rs {
		if size += rs[i].Size; size > maxMutationBytes {
			return &store.MutationError{Index: i, Err: fmt.Errorf(
				"%w: an atomic batch of more than %d bytes", store.ErrTooLarge, maxMutationBytes)}
		}
	}
	return nil
}

// send sends the statements of every partition: one batch per partition
// when atomic, else chunks of the provider's batch size; partitions and
// chunks go out in parallel, which the timestamps make safe.
func (s *Store) send(ctx context.Context, parts []*partStmts, atomic bool) error {
	var tasks []func(context.Context) error
	for _, p := range parts {
		size := s.provider.batchStatements()
		if atomic {
			size = len(p.stmts)
		}
		for chunk := range slices.Chunk(p.stmts, max(size, 1)) {
			tasks = append(tasks, func(ctx context.Context) error { return s.exec(ctx, chunk) })
		}
	}
	return remote.RunAll(ctx, tasks)
}

// exec sends statements of one partition: alone, or as one batch.
func (s *Store) exec(ctx context.Context, stmts []stmt) error {
	return s.retry.do(ctx, true, func(ctx context.Context) error {
		if len(stmts) == 1 {
			return s.session.Query(stmts[0].cql, stmts[0].args...).Idempotent(true).ExecContext(ctx)
		}
		// A logged batch of one partition is one mutation: the cluster
		// skips the batch log for it, so it costs what an unlogged batch
		// does, and stays atomic where the provider defines atomicity by
		// the batch type (Keyspaces).
		b := s.session.Batch(gocql.LoggedBatch)
		for _, st := range stmts {
			b.Query(st.cql, st.args...)
		}
		return b.ExecContext(ctx)
	})
}

// DeletePartition deletes a partition of the table and of its companion
// with partition tombstones, in one mutation; see store.Store.
func (s *Store) DeletePartition(ctx context.Context, name string, partition []any) (err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer s.observe("delete_partition", timeNow(), &err)
	sc, err := s.lookup(ctx, name)
	if err != nil {
		return err
	}
	p, _, err := kit.ResolvePartition(&sc.spec, partition)
	if err != nil {
		return err
	}
	if err := s.exec(ctx, deletePartitionStmts(sc, p, s.stamps.next(1))); err != nil {
		return s.tableErr(ctx, sc, "delete partition in", err)
	}
	return nil
}

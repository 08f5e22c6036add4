package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

const (
	spaceRow   = 0x01
	spaceIndex = 0x02
)

func rowKey(dst, prefix, pk, ck []byte) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, pk...)
	dst = append(dst, spaceRow)
	return append(dst, ck...)
}

func indexPrefix(prefix, pk []byte, idx int, value any) []byte {
	k := append(append([]byte(nil), prefix...), pk...)
	k = append(k, spaceIndex, byte(idx))
	return kit.EncodeTuple(k, []any{value}, false)
}

// indexes maps value-column positions to index numbers for a table.
func indexOf(spec *store.TableSpec, col int) int {
	for i, ix := range spec.Indexes {
		if spec.ValueIndex(ix.Column) == col {
			return i
		}
	}
	return -1
}

var _ store.DeferredWriter = (*Store)(nil)

// Write applies a batch atomically (one Pebble batch, synced unless NoSync);
// see store.Store.
func (s *Store) Write(ctx context.Context, name string, batch []store.Mutation) error {
	return s.write(ctx, name, batch, s.wo)
}

// WriteDeferred is Write without the sync: Pebble's write-ahead log is one
// ordered file, so the next synced Write makes this batch durable too; see
// store.DeferredWriter.
func (s *Store) WriteDeferred(ctx context.Context, name string, batch []store.Mutation) error {
	return s.write(ctx, name, batch, pebble.NoSync)
}

func (s *Store) write(ctx context.Context, name string, batch []store.Mutation, wo *pebble.WriteOptions) error {
	if len(batch) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return err
	}
	spec := &t.Spec
	rs, err := kit.ResolveGuardedBatch(spec, batch, s.now(), MaxRowBytes)
	if err != nil {
		return err
	}
	if err := s.admit(name, addsData(rs)); err != nil {
		return err
	}
	// A sweeper's batch deletes only rows with nothing live in them, which
	// no read can tell apart from absent ones: applying it in chunks is
	// atomic to every reader, and each chunk holds the locks of only its own
	// rows, briefly. Only the last chunk waits for the fsync, which covers
	// the chunks before it.
	if len(rs) > sweepChunk && onlyDeleteIfExpired(rs) {
		for len(rs) > sweepChunk {
			if err := s.apply(name, t, rs[:sweepChunk], pebble.NoSync); err != nil {
				return err
			}
			rs = rs[sweepChunk:]
		}
	}
	return s.apply(name, t, rs, wo)
}

// sweepChunk is how many DeleteIfExpired mutations are applied at once.
const sweepChunk = 64

// addsData reports whether a batch upserts anything: a batch of deletes
// only frees space, and is accepted below the free-space floor.
func addsData(rs []kit.ResolvedMutation) bool {
	for i := range rs {
		if rs[i].Kind == store.Upsert {
			return true
		}
	}
	return false
}

func onlyDeleteIfExpired(rs []kit.ResolvedMutation) bool {
	for i := range rs {
		if rs[i].Kind != store.DeleteIfExpired {
			return false
		}
	}
	return true
}

// apply applies resolved mutations to table t as one Pebble batch; the
// caller holds s.mu shared.
func (s *Store) apply(name string, t *table, rs []kit.ResolvedMutation, wo *pebble.WriteOptions) error {
	spec := &t.Spec
	sc := getApplyScratch(len(rs))
	defer putApplyScratch(sc)
	// Counted begun before anything of the batch can be read, and ended
	// whatever its outcome (store.Generations).
	sc.slots = s.gens.begin(sc.slots, t.ID, rs)
	defer s.gens.end(sc.slots)
	// A batch that must read rows (to check expiry, or to find index entries
	// to remove) uses an indexed batch, so it reads its own earlier
	// mutations too; a batch that reads only to check conditions, on rows
	// it has not written before them, reads the database and stays a
	// plain batch, cheaper to build. A row read to decide a write (a
	// condition, an expiry check) is locked exclusively until the batch is
	// applied; every other row of the batch is locked shared.
	var rows rowSet
	reads, indexed := false, false
	var key, val []byte
	var err error
	for i := range rs {
		r := &rs[i]
		decides := r.Cond != nil || r.Kind == store.DeleteIfExpired
		deletes := r.Kind == store.DeleteIfExpired || (r.Kind == store.DeleteRow && len(spec.Indexes) > 0)
		reads = reads || decides || deletes
		start := len(sc.keys)
		sc.keys = rowKey(sc.keys, t.prefix, r.PartitionKey, r.ClusteringKey)
		sc.ends = append(sc.ends, len(sc.keys))
		indexed = indexed || deletes || (r.Cond != nil && sc.keyBefore(i))
		s.rows.add(&rows, sc.keys[start:], decides)
	}
	// A batch that reads nothing goes into Pebble in key order (see
	// sortBatch); one that reads keeps its own order, which its reads and
	// a failed condition's index follow.
	order := sc.order
	if !reads {
		sc.sortBatch()
	}
	// A sweeper's batch (conditional deletes only) reads its rows through
	// one iterator over the database rather than a Get each: in key order,
	// as the sweeper sends them, each seek starts from the row before. It
	// needs no indexed batch, since it reads nothing it wrote (a row twice
	// in it is deleted twice, which is the same).
	sweep := onlyDeleteIfExpired(rs)
	if sweep {
		indexed = false
	}
	var b *pebble.Batch
	var reader pebble.Reader = s.db
	if indexed {
		b = s.db.NewIndexedBatch()
		reader = b
	} else {
		b = s.db.NewBatch()
	}
	defer b.Close()
	s.rows.lock(&rows)
	locked := true
	defer func() {
		if locked {
			s.rows.unlock(&rows)
		}
	}()
	var it *pebble.Iterator
	if sweep {
		// Opened under the row locks: it must see every write to its rows
		// committed before them.
		if it, err = s.db.NewIter(nil); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		defer it.Close()
	}
	now := s.now().UnixMilli()
	for _, i := range order {
		r := &rs[i]
		key = sc.key(int(i))
		if r.Cond != nil {
			ok, err := condHolds(reader, spec, r.Cond, key, now)
			if err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
			if !ok {
				return &store.MutationError{Index: int(i), Err: store.ErrConflict}
			}
		}
		switch r.Kind {
		case store.Upsert:
			val = encodeUpsert(val[:0], r)
			if len(r.Cells) == len(spec.Values) {
				err = b.Set(key, val, nil)
			} else {
				err = b.Merge(key, val, nil)
			}
			for _, c := range r.Cells {
				if ix := indexOf(spec, c.Col); ix >= 0 && err == nil {
					err = b.Set(append(indexPrefix(t.prefix, r.PartitionKey, ix, c.Value), r.ClusteringKey...), nil, nil)
				}
			}
		case store.DeleteCells:
			err = b.Merge(key, encodeDeleteCells(val[:0], r), nil)
		case store.DeleteRow, store.DeleteIfExpired:
			err = s.deleteRow(b, it, t, r, key, now)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := s.commit(b, wo, func() { s.rows.unlock(&rows); locked = false }); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// commit commits b and calls applied once b is applied (visible to reads
// and to later batches), before a synced commit waits for its fsync: the
// row locks are released there, so that writes queued behind them share
// the next fsync (group commit) rather than wait for this one. This is no
// weaker than a plain Commit, under which a batch is also visible before
// its fsync; and every batch applied later is later in the log.
//
// An error here is a fault of the write-ahead log (the batch itself was
// built without one): it is recorded, and every later write is refused
// (health.go). Pebble panics on some of them (a log writer that refuses a
// record); the panic is turned into the same fault, so that a request
// gets an error rather than the process a crash, and no later write
// reaches the broken commit pipeline.
func (s *Store) commit(b *pebble.Batch, wo *pebble.WriteOptions, applied func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.guard.panicked.Store(true)
			err = fmt.Errorf("pebble: commit panicked: %v", v)
		}
		if err != nil {
			s.fail(err)
			err = store.Wrapf(store.ErrStorageFault, err, "the write failed")
		}
	}()
	if !wo.Sync {
		err = b.Commit(wo)
		applied()
		return err
	}
	// ApplyNoSyncWait is Pebble's own split of Commit into apply and
	// SyncWait; a batch it applied must not be closed before SyncWait.
	err = s.db.ApplyNoSyncWait(b, wo)
	applied()
	if err != nil {
		return err
	}
	return b.SyncWait()
}

// deleteRow deletes a row and its index entries; for DeleteIfExpired only
// when nothing of the row is live at now. It reads the row through it when
// given, else from b when b is indexed.
func (s *Store) deleteRow(b *pebble.Batch, it *pebble.Iterator, t *table, r *kit.ResolvedMutation, key []byte, now int64) error {
	if !b.Indexed() && it == nil {
		return b.Delete(key, nil)
	}
	v, closer, err := readRow(b, it, key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	var f fragment
	if err := decodeFragment(v, &f); err != nil {
		return err
	}
	if r.Kind == store.DeleteIfExpired && fragmentLive(&f, now) {
		return nil
	}
	for _, c := range f.cells {
		ix := indexOf(&t.Spec, int(c.col))
		if ix < 0 || c.kind == kindTomb {
			continue
		}
		k := indexPrefix(t.prefix, r.PartitionKey, ix, decodeValue(t.Spec.Values[c.col].Type, c.payload))
		if err := b.Delete(append(k, r.ClusteringKey...), nil); err != nil {
			return err
		}
	}
	return b.Delete(key, nil)
}

// readRow reads the row at key through it, positioned by a seek, or, with
// no iterator, from b. The value is valid until the closer is closed or it
// moves.
func readRow(b *pebble.Batch, it *pebble.Iterator, key []byte) ([]byte, io.Closer, error) {
	if it == nil {
		return b.Get(key)
	}
	if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
		if err := it.Error(); err != nil {
			return nil, nil, err
		}
		return nil, nil, pebble.ErrNotFound
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, nil, err
	}
	return v, noClose{}, nil
}

// noClose is the closer of a value read through an iterator, which the
// iterator owns.
type noClose struct{}

func (noClose) Close() error { return nil }

// condHolds evaluates a condition against the row's live content as r
// holds it: the database, or an indexed batch over it when the batch wrote
// the row before. The caller holds the row's stripe exclusively, so no
// other writer changes the row between this read and the batch's commit.
func condHolds(r pebble.Reader, spec *store.TableSpec, c *kit.ResolvedCondition, key []byte, now int64) (bool, error) {
	var f fragment
	v, closer, err := r.Get(key)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return false, err
	default:
		defer closer.Close()
		if err := decodeFragment(v, &f); err != nil {
			return false, err
		}
	}
	switch c.Kind {
	case store.IfAbsent:
		return !fragmentLive(&f, now), nil
	case store.IfExists:
		return fragmentLive(&f, now), nil
	}
	for _, cell := range f.cells {
		if int(cell.col) != c.Col {
			continue
		}
		if cell.kind == kindTomb || !liveAt(cell.exp, now) {
			return false, nil
		}
		return kit.ValuesEqual(c.Value, decodeValue(spec.Values[c.Col].Type, cell.payload)), nil
	}
	return false, nil
}

func fragmentLive(f *fragment, now int64) bool {
	return (f.hasMarker && liveAt(f.markerExp, now)) || anyLiveCell(f, now)
}

// DeletePartition removes a partition's rows and index entries with one
// range deletion.
func (s *Store) DeletePartition(ctx context.Context, name string, partition []any) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return err
	}
	_, pk, err := kit.ResolvePartition(&t.Spec, partition)
	if err != nil {
		return err
	}
	if err := s.admit(name, false); err != nil {
		return fmt.Errorf("delete partition in %s: %w", name, err)
	}
	// The partition's rows are not known, so every stripe is held shared:
	// no read-then-write of one of its rows straddles the deletion.
	all := allShared()
	s.rows.lock(all)
	locked := true
	defer func() {
		if locked {
			s.rows.unlock(all)
		}
	}()
	start := append(append([]byte(nil), t.prefix...), pk...)
	// Begun now (a deferred call's arguments are evaluated at once),
	// ended on return.
	defer s.gens.end(s.gens.begin(nil, t.ID, []kit.ResolvedMutation{{PartitionKey: pk}}))
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(start, prefixEnd(start), nil); err != nil {
		return fmt.Errorf("delete partition in %s: %w", name, err)
	}
	if err := s.commit(b, s.wo, func() { s.rows.unlock(all); locked = false }); err != nil {
		return fmt.Errorf("delete partition in %s: %w", name, err)
	}
	return nil
}

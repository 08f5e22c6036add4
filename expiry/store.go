package expiry

import (
	"context"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Store is a store.Store that indexes every write carrying an expiry, so
// that its Sweeper can physically delete the row soon after it expires.
// Every other call goes straight to the wrapped Store.
type Store struct {
	inner  store.Store
	opts   Options
	layout layout
	specs  *kit.SpecCache[*store.TableSpec]
	m      *metrics
	maxRow int
	// resolve validates a batch as the wrapped Store does.
	resolve func(*store.TableSpec, []store.Mutation, time.Time, int) ([]kit.ResolvedMutation, error)
	sweep   *Sweeper
	// marked: the index keeps due markers (marks.go). An index created
	// before markers existed has none for its entries, and its sweeper
	// walks every window.
	marked bool
	marks  markCache
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Wrapper = (*Store)(nil)
)

// Wrap returns a decorator over inner. It creates IndexTable and
// store.MetaTable if needed and, on first use, records the sweeper's
// watermark and the index layout. The Sweeper is created but runs no
// passes of its own: whoever owns the schedule calls Pass or SweepOnce.
// Closing the returned Store closes inner and nothing else.
// The decorator declares store.DeferredWriter itself, since it must index
// every write; other optional interfaces of inner are found through Unwrap
// with store.As.
func Wrap(ctx context.Context, inner store.Store, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	caps := inner.Capabilities()
	opts = opts.withDefaults(caps)
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	l := layout{windowMs: opts.Window.Milliseconds(), shards: int64(opts.Shards)}
	st, err := setup(ctx, inner, l, opts.Now())
	if err != nil {
		return nil, err
	}
	s := &Store{
		inner:   inner,
		opts:    opts,
		layout:  l,
		specs:   kit.NewSpecCache(inner, opts.CacheTTL, opts.Now, func(spec *store.TableSpec) *store.TableSpec { return spec }),
		m:       m,
		maxRow:  caps.MaxRowBytes,
		resolve: kit.ResolveBatch,
		marked:  st.Marked,
	}
	if caps.GuardedBatch {
		s.resolve = kit.ResolveGuardedBatch
	}
	s.sweep = newSweeper(s, st)
	return s, nil
}

// Unwrap returns the wrapped Store, so that store.As finds the optional
// interfaces this decorator does not declare (see store.Wrapper).
func (s *Store) Unwrap() store.Store { return s.inner }

// Sweeper returns the sweeper that deletes the rows this Store indexes.
func (s *Store) Sweeper() *Sweeper { return s.sweep }

// indexed reports whether writes to table are indexed.
func (s *Store) indexed(table string) bool {
	if table == IndexTable || table == store.MetaTable {
		return false
	}
	return s.opts.Exclude == nil || !s.opts.Exclude(table)
}

// mayExpire reports whether any mutation of batch needs an index entry: an
// upsert carrying an expiry of its own, or (defaults) the table's default
// TTL, or a cell delete, in the store.ExpirySweep mode (rows in the other
// modes are removed by the backend's TTL or with their table, never by the
// sweeper). Batches that need none skip the spec lookup, and
// batches that need none but the default to a table without a default TTL
// skip resolving.
func mayExpire(batch []store.Mutation, defaults bool) bool {
	for i := range batch {
		m := &batch[i]
		if !m.Expiry.Swept() {
			continue
		}
		if m.Kind == store.DeleteCells {
			return true
		}
		if m.Kind != store.Upsert {
			continue
		}
		if !m.ExpiresAt.IsZero() || (defaults && !m.NoExpiry) {
			return true
		}
		for _, c := range m.Cells {
			if !c.ExpiresAt.IsZero() {
				return true
			}
		}
	}
	return false
}

// Write indexes the upserts of batch that carry an expiry, then applies the
// batch. The index entries are written first, so a failure in between
// leaves entries without rows (swept harmlessly), never rows without
// entries. Bad input is refused before anything is written, with the same
// error the wrapped Store would return.
func (s *Store) Write(ctx context.Context, table string, batch []store.Mutation) error {
	return s.write(ctx, table, batch, false)
}

var _ store.DeferredWriter = (*Store)(nil)

// WriteDeferred is Write whose batch becomes durable with the next Write
// (see store.DeferredWriter) when the wrapped Store is a DeferredWriter; on
// any other Store it is Write, durable when it returns. The index entries
// still precede the rows in the log.
func (s *Store) WriteDeferred(ctx context.Context, table string, batch []store.Mutation) error {
	return s.write(ctx, table, batch, true)
}

// Scan reads through the wrapped Store's Scan, so that a decorated store
// reads as fast as a bare one.
func (s *Store) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	return s.inner.Scan(ctx, table, q, fn)
}

// writeInner applies batch to the wrapped Store, deferred when asked and
// the wrapped Store can.
func (s *Store) writeInner(ctx context.Context, table string, batch []store.Mutation, deferred bool) error {
	if deferred {
		if dw, ok := store.As[store.DeferredWriter](s.inner); ok {
			return dw.WriteDeferred(ctx, table, batch)
		}
	}
	return s.inner.Write(ctx, table, batch)
}

func (s *Store) write(ctx context.Context, table string, batch []store.Mutation, deferred bool) error {
	if !s.indexed(table) || !mayExpire(batch, true) {
		return s.writeInner(ctx, table, batch, deferred)
	}
	spec, err := s.specs.Get(ctx, table)
	if err != nil {
		return err
	}
	if spec.DefaultTTL == 0 && !mayExpire(batch, false) {
		return s.writeInner(ctx, table, batch, deferred)
	}
	start := s.opts.Now()
	res, err := s.resolve(spec, batch, start, s.maxRow)
	if err != nil {
		// A stale cached spec must not refuse a valid write: read it again.
		if spec, err = s.specs.Refresh(ctx, table); err != nil {
			return err
		}
		if res, err = s.resolve(spec, batch, start, s.maxRow); err != nil {
			return err
		}
	}
	entries := s.plan(table, spec, batch, res, start)
	if len(entries) == 0 {
		return s.writeInner(ctx, table, batch, deferred)
	}
	if err := s.writeEntries(ctx, entries); err != nil {
		return fmt.Errorf("expiry: index writes to %s: %w", table, err)
	}
	s.m.indexed.Add(float64(len(entries)))
	if err := s.writeInner(ctx, table, batch, deferred); err != nil {
		return err
	}
	if end := s.opts.Now(); end.Sub(start) >= s.opts.Grace {
		// The sweeper may already have looked for these entries before the
		// rows landed, or finished their windows before the entries did.
		return s.reindex(ctx, table, spec, batch, res, entries, end)
	}
	return nil
}

// plan returns the index entries of a resolved batch whose write started at
// start. An upsert is indexed at the latest finite expiry it writes (row
// marker or cell): the row cannot be dead before then, and indexing every
// such write (even one whose marker never expires) means that whichever
// write's content outlives the others has an entry no earlier than its
// expiry, still pending while that content lives. A cell delete can kill a
// row at once (its other content expired, the deleted cell was what kept
// it), when every entry for it may be spent: it is indexed at start.
// Entries are due no sooner than Grace after start, so the write has landed
// before the sweeper looks.
func (s *Store) plan(table string, spec *store.TableSpec, batch []store.Mutation, res []kit.ResolvedMutation, start time.Time) []entry {
	grace := s.opts.Grace.Milliseconds()
	earliest := start.UnixMilli() + grace
	var out []entry
	for i := range res {
		r := &res[i]
		if !r.Expiry.Swept() {
			continue // removed by native TTL or with its table
		}
		if r.Kind == store.DeleteCells {
			e := entry{
				table: table, pk: r.PartitionKey, ck: r.ClusteringKey,
				exp: start.UnixMilli(), due: earliest,
				id: rowID(table, r.PartitionKey, r.ClusteringKey),
			}
			s.layout.place(&e)
			out = append(out, e)
			continue
		}
		if r.Kind != store.Upsert {
			continue
		}
		// A default TTL is resolved again by the backend against its own
		// reading of the clock, up to Grace later than ours.
		defaulted := !batch[i].NoExpiry && batch[i].ExpiresAt.IsZero() && spec.DefaultTTL > 0
		exp := r.ExpiresAt
		due := exp
		if defaulted {
			due += grace
		}
		for j, c := range r.Cells {
			exp = max(exp, c.ExpiresAt)
			if !batch[i].Cells[j].ExpiresAt.IsZero() { // the cell's own expiry is exact
				due = max(due, c.ExpiresAt)
			}
		}
		if exp == 0 {
			continue
		}
		e := entry{
			table: table, pk: r.PartitionKey, ck: r.ClusteringKey,
			exp: exp, due: max(due, earliest),
			id: rowID(table, r.PartitionKey, r.ClusteringKey),
		}
		s.layout.place(&e)
		out = append(out, e)
	}
	return out
}

// writeEntries writes index entries, after the markers of their windows
// (marks.go). Every caller writes to the inner store
// right after, and that write's
// sync makes the entries durable; so on a backend with one ordered log the
// entries are written deferred, one sync per write instead of two.
func (s *Store) writeEntries(ctx context.Context, entries []entry) error {
	if err := s.writeMarks(ctx, entries); err != nil {
		return err
	}
	muts := make([]store.Mutation, len(entries))
	for i := range entries {
		muts[i] = entries[i].upsert()
	}
	if dw, ok := store.As[store.DeferredWriter](s.inner); ok {
		return dw.WriteDeferred(ctx, IndexTable, muts)
	}
	return s.inner.Write(ctx, IndexTable, muts)
}

// reindex writes fresh entries for a write that ended at end, then removes
// the entries it replaces (which may sit in a window already swept).
// Entries whose due time did not change are left alone.
func (s *Store) reindex(ctx context.Context, table string, spec *store.TableSpec, batch []store.Mutation, res []kit.ResolvedMutation, old []entry, end time.Time) error {
	fresh := s.plan(table, spec, batch, res, end)
	var add []entry
	var del []store.Mutation
	for i := range fresh {
		if fresh[i].due != old[i].due {
			add = append(add, fresh[i])
			del = append(del, old[i].deletion())
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := s.writeEntries(ctx, add); err != nil {
		return fmt.Errorf("expiry: re-index slow write to %s: %w", table, err)
	}
	s.m.reindexed.Add(float64(len(add)))
	if err := s.inner.Write(ctx, IndexTable, del); err != nil {
		return fmt.Errorf("expiry: re-index slow write to %s: %w", table, err)
	}
	return nil
}

// CreateTable creates a table in the wrapped Store.
func (s *Store) CreateTable(ctx context.Context, spec store.TableSpec) error {
	defer s.specs.Forget(spec.Name)
	return s.inner.CreateTable(ctx, spec)
}

// DropTable drops a table. Its index entries stay behind and are removed
// by the sweeper when due. IndexTable itself cannot be dropped through the
// decorator, since pending entries would be lost.
func (s *Store) DropTable(ctx context.Context, name string) error {
	if name == IndexTable {
		return store.Errorf(store.ErrInvalid, "%s is managed by the expiry sweeper", IndexTable)
	}
	defer s.specs.Forget(name)
	return s.inner.DropTable(ctx, name)
}

// Tables lists tables of the wrapped Store.
func (s *Store) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	return s.inner.Tables(ctx, prefix)
}

// SetCapacity changes a table's capacity in the wrapped Store.
func (s *Store) SetCapacity(ctx context.Context, table string, c store.Capacity) error {
	return s.inner.SetCapacity(ctx, table, c)
}

// Get reads one row from the wrapped Store.
func (s *Store) Get(ctx context.Context, table string, partition, clustering []any) (store.Row, error) {
	return s.inner.Get(ctx, table, partition, clustering)
}

// Spec returns a table's spec from the wrapped Store.
func (s *Store) Spec(ctx context.Context, name string) (store.TableSpec, error) {
	return s.inner.Spec(ctx, name)
}

// QueryIndex reads a local index of the wrapped Store.
func (s *Store) QueryIndex(ctx context.Context, table, index string, partition []any, value any) ([][]any, error) {
	return s.inner.QueryIndex(ctx, table, index, partition, value)
}

// DeletePartition deletes a partition in the wrapped Store; index entries
// for its rows are removed by the sweeper when due.
func (s *Store) DeletePartition(ctx context.Context, table string, partition []any) error {
	return s.inner.DeletePartition(ctx, table, partition)
}

// Stats reports what the wrapped Store physically holds.
func (s *Store) Stats(ctx context.Context, table string) (store.TableStats, error) {
	return s.inner.Stats(ctx, table)
}

// Capabilities reports the wrapped Store's capabilities.
func (s *Store) Capabilities() store.Capabilities { return s.inner.Capabilities() }

// Close closes the wrapped Store. Stop whatever runs sweeper passes
// first.
func (s *Store) Close() error { return s.inner.Close() }

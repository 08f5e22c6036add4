package multitable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// MetaKind is the store.Meta kind under which logical tables are recorded.
const MetaKind = "table"

// Options configures a Registry. The zero value of every field selects its
// default (see DefaultOptions).
type Options struct {
	// Now is the clock item TTLs count from. It should be the clock the
	// Store resolves expiry with. Nil means time.Now.
	Now func() time.Time
	// Logger receives repairs and clean-up failures. Nil discards.
	Logger *slog.Logger
	// Registerer receives the metrics. Nil registers nothing.
	Registerer prometheus.Registerer
	// BucketWidth is the time-bucket width of tables created from now on
	// (each table keeps the width it was created with): whole seconds,
	// 1s..8760h. Default 1h. Narrower buckets keep partitions small under
	// heavy writes; wider ones mean fewer bucket rows for sparse tables.
	BucketWidth time.Duration
	// CacheTTL is how long a table's configuration, once read, is trusted
	// before it is read again: another process's delete of a table is seen
	// within it. Default store.DefaultCacheTTL (2 s); negative reads it on
	// every operation. This process's own creates and deletes are seen at
	// once.
	CacheTTL time.Duration
	// ReadParallelism is how many item rows a listing reads at once when it
	// verifies a page's entries; 1 reads them one by one. Default: 1 on the
	// embedded backend, whose reads are in-process and CPU-bound (parallel
	// reads measured slower there), 8 on remote backends, whose reads are
	// round trips.
	ReadParallelism int
	// RewriteStarted, if set, is called after a default-TTL rewrite job
	// is recorded (Config.Rewrite), so that the process running the jobs
	// starts it at once instead of at its next pass.
	RewriteStarted func()
	// RewriteBatch is how many items one batch of a default-TTL rewrite
	// visits before its cursor is saved: 1..store.MaxLimit. Default
	// RewriteItems.
	RewriteBatch int
}

// DefaultOptions returns the defaults Open applies to zero fields, for a
// remote backend (see ReadParallelism).
func DefaultOptions() Options {
	return Options{BucketWidth: time.Hour, ReadParallelism: 8, CacheTTL: store.DefaultCacheTTL, RewriteBatch: RewriteItems}
}

// Validate checks the options after defaults are applied; errors wrap
// ErrInvalid.
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.BucketWidth < time.Second || o.BucketWidth > 8760*time.Hour || o.BucketWidth%time.Second != 0 {
		return invalid("bucket width %s: want whole seconds in 1s..8760h", o.BucketWidth)
	}
	if o.RewriteBatch < 1 || o.RewriteBatch > store.MaxLimit {
		return invalid("rewrite batch %d: want 1..%d", o.RewriteBatch, store.MaxLimit)
	}
	if o.ReadParallelism < 1 || o.ReadParallelism > 256 {
		return invalid("read parallelism %d: want 1..256", o.ReadParallelism)
	}
	return nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BucketWidth == 0 {
		o.BucketWidth = d.BucketWidth
	}
	if o.ReadParallelism == 0 {
		o.ReadParallelism = d.ReadParallelism
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = d.CacheTTL
	}
	if o.RewriteBatch == 0 {
		o.RewriteBatch = d.RewriteBatch
	}
	return o
}

// Registry is the set of logical tables in one Store, and the operations
// on their items. It is safe for concurrent use, also by several processes
// sharing a backend: it keeps no state another process could invalidate
// except a cache of bucket rows it has written, keyed by table generation.
type Registry struct {
	st      store.Store
	meta    store.Meta
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	buckets *bucketCache
	records *recordCache
	// guarded: the store applies a put's entry and item in one guarded
	// batch (store.Capabilities.GuardedBatch).
	guarded bool

	// ddl serializes creating and deleting tables within this process.
	ddl sync.Mutex
}

// New returns a Registry over st, creating store.MetaTable and ItemsTable
// if needed.
func New(ctx context.Context, st store.Store, opts Options) (*Registry, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	// An in-process backend answers reads in microseconds: parallel reads
	// would only add scheduling.
	if opts.ReadParallelism == 0 && !st.Capabilities().SharedAcrossProcesses {
		opts.ReadParallelism = 1
	}
	opts = opts.withDefaults()
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("multitable: register metrics: %w", err)
	}
	meta := store.Meta{S: st}
	if err := meta.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("multitable: create %s: %w", store.MetaTable, err)
	}
	if err := st.CreateTable(ctx, ItemsSpec); err != nil {
		return nil, fmt.Errorf("multitable: create %s: %w", ItemsTable, err)
	}
	return &Registry{
		st: st, meta: meta, opts: opts, log: opts.Logger, now: opts.Now,
		metrics: m, buckets: newBucketCache(bucketCacheSize),
		records: newRecordCache(opts.CacheTTL, opts.Now),
		guarded: st.Capabilities().GuardedBatch,
	}, nil
}

// Config is a logical table's configuration.
type Config struct {
	// DefaultTTL applies to items put without a TTL of their own; zero
	// means they never expire. Whole milliseconds.
	DefaultTTL time.Duration
	// Expiry is how expired items are removed from disk (see
	// store.ExpiryMode): store.ExpirySweep or store.ExpiryNative, never
	// store.ExpiryDrop (ErrDropMode). Creating a table with store.ExpiryDefault gives
	// it store.DefaultExpiryMode of the backend, and CreateTable of an
	// existing table with it keeps the table's mode; a Table read back
	// always names its mode. Another mode for an existing table changes it
	// for the writes that follow: rows already written keep the removal
	// they were written with.
	Expiry store.ExpiryMode
	// KeepDefaultTTL, for CreateTable of an existing table, leaves its
	// default TTL as it is, whatever DefaultTTL says; a new table gets
	// DefaultTTL. A Table read back never has it set.
	KeepDefaultTTL bool
	// Rewrite, for CreateTable of an existing table, asks that the items
	// already put without a ttl of their own get the table's default TTL
	// too, by a background job (see Registry.Rewrite). Without it they
	// keep the expiry they were put with. A new table has nothing to
	// rewrite. A Table read back never has it set.
	Rewrite bool
}

// Table describes a logical table.
type Table struct {
	Name string
	Config
	// BucketWidth is the width of the time buckets its listing uses.
	BucketWidth time.Duration
	// CreatedAt is when this incarnation of the table was created.
	CreatedAt time.Time
}

// record is a logical table's document in store.MetaTable.
type record struct {
	DefaultTTLMs int64     `json:"default_ttl_ms"`
	BucketMs     int64     `json:"bucket_ms"`
	Gen          int64     `json:"gen"`
	CreatedAt    time.Time `json:"created_at"`
	// Expiry is the store.ExpiryMode's name; empty in records written
	// before modes existed, whose tables are swept.
	Expiry string `json:"expiry,omitempty"`
	// Deleting is set while the table's rows are being purged; Deleted
	// marks a tombstone, kept so that a re-created table gets the next
	// generation.
	Deleting bool `json:"deleting,omitempty"`
	Deleted  bool `json:"deleted,omitempty"`
}

func (r record) live() bool { return !r.Deleting && !r.Deleted }

// mode is the table's expiry mode; a record without one is swept.
func (r record) mode() store.ExpiryMode {
	m, err := store.ParseExpiryMode(r.Expiry)
	if err != nil || m == store.ExpiryDefault {
		return store.ExpirySweep
	}
	return m
}

func (r record) table(name string) Table {
	return Table{
		Name:        name,
		Config:      Config{DefaultTTL: time.Duration(r.DefaultTTLMs) * time.Millisecond, Expiry: r.mode()},
		BucketWidth: time.Duration(r.BucketMs) * time.Millisecond,
		CreatedAt:   r.CreatedAt,
	}
}

func (r record) ref(name string) tableRef {
	return tableRef{name: name, gen: r.Gen, bucketMs: r.BucketMs, expiry: r.mode()}
}

func loadRecord(ctx context.Context, meta store.Meta, name string) (record, bool, error) {
	r, doc, err := loadRecordDoc(ctx, meta, name)
	return r, doc != nil, err
}

// loadRecordDoc returns a table's record and the document it was read
// from, for a compare-and-swap; a nil document when there is none.
func loadRecordDoc(ctx context.Context, meta store.Meta, name string) (record, []byte, error) {
	doc, err := meta.Get(ctx, MetaKind, name)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
		return record{}, nil, nil
	}
	if err != nil {
		return record{}, nil, fmt.Errorf("read table %s: %w", name, err)
	}
	var r record
	if err := json.Unmarshal(doc, &r); err != nil {
		return record{}, nil, fmt.Errorf("multitable: table %s: corrupt record: %w", name, err)
	}
	return r, doc, nil
}

// swapRecord writes r in place of the document old (nil: only if there is
// none), atomically across processes; it returns store.ErrConflict when
// another process changed the record since old was read.
func (g *Registry) swapRecord(ctx context.Context, name string, old []byte, r record) error {
	doc, err := json.Marshal(r)
	if err != nil {
		return err
	}
	g.records.forget(name)
	defer g.records.forget(name)
	err = g.meta.CompareAndSwap(ctx, MetaKind, name, old, doc)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("write table %s: %w", name, errRaceLost)
	}
	if err != nil {
		return fmt.Errorf("write table %s: %w", name, err)
	}
	return nil
}

// errRaceLost: another process changed a table's record between our read
// and our compare-and-swap.
var errRaceLost = store.Errorf(store.ErrConflict, "the table's record changed concurrently; try again")

func (g *Registry) saveRecord(ctx context.Context, name string, r record) error {
	doc, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// Forget before and after: reads that began before the write finished
	// must not cache what they saw.
	g.records.forget(name)
	defer g.records.forget(name)
	if err := g.meta.Put(ctx, MetaKind, name, doc); err != nil {
		return fmt.Errorf("write table %s: %w", name, err)
	}
	return nil
}

// lookup returns the live table name refers to, or ErrNoTable.
func (g *Registry) lookup(ctx context.Context, name string) (record, error) {
	if err := CheckName(name); err != nil {
		return record{}, err
	}
	if r, ok := g.records.get(name); ok {
		return r, nil
	}
	read, epoch := g.now(), g.records.begin()
	r, ok, err := loadRecord(ctx, g.meta, name)
	if err != nil {
		return record{}, err
	}
	if !ok || !r.live() {
		return record{}, store.Errorf(ErrNoTable, "%q", name)
	}
	g.records.put(name, r, read, epoch)
	return r, nil
}

// CreateTable creates a logical table. It returns created == false and no
// error when the table exists: unchanged when identical; otherwise with
// the new default TTL and (unless store.ExpiryDefault) expiry mode, which
// apply to the puts that follow while the items already put keep their
// expiry. It returns ErrDeleting when a table of that name is being
// deleted.
func (g *Registry) CreateTable(ctx context.Context, name string, cfg Config) (t Table, created bool, err error) {
	if err := CheckName(name); err != nil {
		return Table{}, false, err
	}
	if err := checkTTL("default TTL", cfg.DefaultTTL); err != nil {
		return Table{}, false, err
	}
	if err := store.CheckExpiryMode(g.st.Capabilities(), cfg.Expiry); err != nil {
		return Table{}, false, fmt.Errorf("table %q: %w", name, err)
	}
	if cfg.Expiry == store.ExpiryDrop {
		return Table{}, false, store.Errorf(ErrDropMode, "table %q", name)
	}
	g.ddl.Lock()
	defer g.ddl.Unlock()
	if err := g.meta.Ensure(ctx); err != nil {
		return Table{}, false, err
	}
	// Another process may create or delete the same table between the
	// read and the write: the write is a compare-and-swap against what was
	// read, and a lost race is decided again on what the winner wrote.
	for attempt := 0; ; attempt++ {
		t, created, err := g.createOnce(ctx, name, cfg)
		if !errors.Is(err, errRaceLost) || attempt == 2 {
			if err == nil && !created && cfg.Rewrite {
				err = g.rewriteTable(ctx, name)
			}
			return t, created, err
		}
	}
}

// rewriteTable starts the rewrite of an existing table's items to its
// default TTL as now recorded.
func (g *Registry) rewriteTable(ctx context.Context, name string) error {
	r, ok, err := loadRecord(ctx, g.meta, name)
	if err != nil {
		return err
	}
	if !ok || !r.live() {
		return store.Errorf(ErrNoTable, "%q", name)
	}
	return g.startRewrite(ctx, name, r)
}

func (g *Registry) createOnce(ctx context.Context, name string, cfg Config) (t Table, created bool, err error) {
	old, oldDoc, err := loadRecordDoc(ctx, g.meta, name)
	if err != nil {
		return Table{}, false, err
	}
	ok := oldDoc != nil
	switch {
	case ok && old.Deleting:
		return Table{}, false, store.Errorf(ErrDeleting, "%q; repeat the delete, then create it", name)
	case ok && old.live():
		ttlMs := cfg.DefaultTTL.Milliseconds()
		if cfg.KeepDefaultTTL {
			ttlMs = old.DefaultTTLMs
		}
		sameMode := cfg.Expiry == store.ExpiryDefault || cfg.Expiry == old.mode()
		if old.DefaultTTLMs == ttlMs && sameMode {
			return old.table(name), false, nil
		}
		// A new default TTL or mode applies to the writes that follow; the
		// rows written before keep theirs (their expiry, and an index
		// entry, a native TTL or neither).
		from, fromTTL := old.mode(), time.Duration(old.DefaultTTLMs)*time.Millisecond
		if !sameMode {
			old.Expiry = cfg.Expiry.String()
		}
		old.DefaultTTLMs = ttlMs
		if err := g.swapRecord(ctx, name, oldDoc, old); err != nil {
			return Table{}, false, err
		}
		g.log.Info("logical table changed", "table", name, "default_ttl_from", durfmt.Format(fromTTL), "default_ttl", durfmt.Format(time.Duration(ttlMs)*time.Millisecond),
			"expiry_from", from, "expiry", old.mode())
		return old.table(name), false, nil
	}
	mode := cfg.Expiry
	if mode == store.ExpiryDefault {
		mode = store.DefaultExpiryMode(g.st.Capabilities())
	}
	r := record{
		DefaultTTLMs: cfg.DefaultTTL.Milliseconds(),
		BucketMs:     g.opts.BucketWidth.Milliseconds(),
		// The generation follows the tombstone's, so two processes creating
		// the same table at once agree on it.
		Gen:       old.Gen + 1,
		CreatedAt: g.now().UTC().Truncate(time.Millisecond),
		Expiry:    mode.String(),
	}
	if err := g.swapRecord(ctx, name, oldDoc, r); err != nil {
		return Table{}, false, err
	}
	g.log.Info("logical table created", "table", name, "default_ttl", cfg.DefaultTTL, "expiry", mode, "gen", r.Gen)
	return r.table(name), true, nil
}

// Table returns a logical table, or ErrNoTable.
func (g *Registry) Table(ctx context.Context, name string) (Table, error) {
	r, err := g.lookup(ctx, name)
	if err != nil {
		return Table{}, err
	}
	return r.table(name), nil
}

// Tables returns every live logical table, by name.
func (g *Registry) Tables(ctx context.Context) ([]Table, error) {
	recs, err := liveRecords(ctx, g.meta)
	if err != nil {
		return nil, err
	}
	out := make([]Table, 0, len(recs))
	for _, nr := range recs {
		out = append(out, nr.rec.table(nr.name))
	}
	return out, nil
}

type namedRecord struct {
	name string
	rec  record
}

func liveRecords(ctx context.Context, meta store.Meta) ([]namedRecord, error) {
	docs, err := meta.List(ctx, MetaKind)
	if err != nil {
		return nil, err
	}
	out := make([]namedRecord, 0, len(docs))
	for name, doc := range docs {
		var r record
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("multitable: table %s: corrupt record: %w", name, err)
		}
		if r.live() {
			out = append(out, namedRecord{name, r})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// DeleteTable deletes a logical table and every item in it. Deleting a
// missing table is not an error. The table disappears at once (its items
// can no longer be read, and a table created later under the same name
// starts empty); its rows are then purged. If the purge fails the table
// stays in a deleting state, refusing reads, writes and re-creation, until
// a repeated DeleteTable completes it.
func (g *Registry) DeleteTable(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	g.ddl.Lock()
	defer g.ddl.Unlock()
	r, ok, err := loadRecord(ctx, g.meta, name)
	if err != nil || !ok || r.Deleted {
		return err
	}
	if !r.Deleting {
		r.Deleting = true
		if err := g.saveRecord(ctx, name, r); err != nil {
			return err
		}
	}
	n, err := g.purge(ctx, r.ref(name))
	if err != nil {
		return fmt.Errorf("purge table %s (repeat the delete to finish it): %w", name, err)
	}
	if err := g.saveRecord(ctx, name, record{Gen: r.Gen, Deleted: true}); err != nil {
		return err
	}
	g.log.Info("logical table deleted", "table", name, "gen", r.Gen, "rows_purged", n)
	return nil
}

// purge deletes every row of one table incarnation reachable through its
// bucket directory: items, entries, then bucket rows, so that an
// interrupted purge can resume from the directory.
func (g *Registry) purge(ctx context.Context, t tableRef) (int, error) {
	batch := g.st.Capabilities().DeleteBatch
	if batch <= 0 {
		batch = 100
	}
	purged := 0
	flush := func(muts []store.Mutation) error {
		if len(muts) == 0 {
			return nil
		}
		purged += len(muts)
		return g.st.Write(ctx, ItemsTable, muts)
	}
	err := walkBuckets(ctx, g.st, t, nil, func(b int64, rows []bucketRow) error {
		q := store.Query{Partition: t.entryPartition(b), Limit: batch / 2}
		if q.Limit < 1 {
			q.Limit = 1
		}
		for {
			page, err := kit.Query(ctx, g.st, ItemsTable, q)
			if err != nil {
				return err
			}
			var muts []store.Mutation
			for _, row := range page.Rows {
				key := row.Clustering[1].(string)
				muts = append(muts, store.Mutation{Kind: store.DeleteRow, Partition: t.itemPartition(key), Clustering: itemClustering(key)})
			}
			// Items first: an entry without its item is harmless garbage,
			// an item without its entry would be unreachable.
			if err := flush(muts); err != nil {
				return err
			}
			muts = muts[:0]
			for _, row := range page.Rows {
				muts = append(muts, store.Mutation{Kind: store.DeleteRow, Partition: row.Partition, Clustering: row.Clustering})
			}
			if err := flush(muts); err != nil {
				return err
			}
			if page.NextPageToken == nil {
				break
			}
			q.PageToken = page.NextPageToken
		}
		var muts []store.Mutation
		for _, r := range rows {
			muts = append(muts, t.bucketDelete(r))
		}
		return flush(muts)
	})
	return purged, err
}

package ebb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/promreg"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// DB is an open ebb: a backend, the precise-expiry layer over it, the
// features, and the background roles (shard manager, expiry sweeper) with
// their leases. It is safe for concurrent use. Close it when done.
type DB struct {
	o Options
	// st is the outermost store of the chain (expiry over meter over the
	// backend), the one every feature writes through and closing which
	// closes every layer; store.As reaches the others.
	st      store.Store
	indexes *timeseries.Service
	// migrations routes the reads and writes of indexes that migrate off
	// a legacy table.
	migrations *migrate.Service
	lists      *lists.Service
	tables     *multitable.Registry
	// expirations is the log of expirations; nil when
	// Options.NoExpirations.
	expirations *expirationLog
	// roles are the background roles by name (RoleShardManager,
	// RoleSweeper, RoleRewriter).
	roles map[string]*role
	// rewriter runs the TTL rewrites, as RoleRewriter's pass.
	rewriter *rewriter
	// metrics keeps what Open registered on Options.Registerer, for
	// Close to unregister; nil without a Registerer.
	metrics *promreg.Tracker
	// managerRan is set once this replica's shard manager has completed a
	// pass, for Ready.
	managerRan atomic.Bool

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open opens the backend (or takes over the one in opts.Store), wires the
// precise-expiry decorator and every feature on it, and starts the
// background roles unless opts.NoBackground. ctx bounds the opening only
// (creating ebb's metadata tables on a remote backend); the DB lives until
// Close. On error everything opened so far, opts.Store included, is
// closed.
func Open(ctx context.Context, opts Options) (db *DB, err error) {
	if err := opts.Validate(); err != nil {
		if opts.Store != nil {
			_ = opts.Store.Close()
		}
		return nil, err
	}
	o := opts.withDefaults()
	var tracker *promreg.Tracker
	if o.Registerer != nil {
		// Every component registers through the tracker, so that Close
		// unregisters all of it.
		tracker = promreg.Track(o.Registerer)
		o.Registerer = tracker
	}
	db = &DB{o: o, st: o.Store, metrics: tracker}
	if db.st == nil {
		st, err := ebbpebble.Open(o.Dir, ebbpebble.Options{Logger: o.Logger, Now: o.Now, MinFreeBytes: o.MinFreeBytes})
		if err != nil {
			return nil, fmt.Errorf("ebb: open %s: %w", o.Dir, err)
		}
		db.st = st
		if err := promreg.Register(o.Registerer, st.Collector()); err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("ebb: register pebble metrics: %w", err)
		}
	}
	// A failed Open returns a nil DB, so the deferred close keeps its own
	// reference to the one being built.
	opened := db
	defer func() {
		if err != nil {
			_ = opened.closeStores()
			opened.unregisterMetrics()
			db = nil
		}
	}()

	// Metering sits next to the backend, so that it counts what the
	// provider would bill, the expiry index's own writes included.
	if !o.NoMetering {
		m, err := meter.Wrap(db.st, meter.Options{Now: o.Now, Registerer: o.Registerer, CacheTTL: o.CacheTTL})
		if err != nil {
			return nil, fmt.Errorf("ebb: %w", err)
		}
		db.st = m
	}
	// The log of expirations lives below the expiry decorator: its rows
	// carry no expiry of their own.
	if err := db.openExpirations(ctx); err != nil {
		return nil, err
	}
	// Precise expiry decorates the store next, so every feature's writes
	// carrying an expiry are indexed and swept.
	exp, err := expiry.Wrap(ctx, db.st, expiry.Options{
		Now: o.Now, Logger: o.Logger, Registerer: o.Registerer, SweepInterval: o.SweepInterval,
		CacheTTL: o.CacheTTL, MaxDeletesPerSecond: o.SweepMaxDeletesPerSecond,
		Exclude: o.SweepExclude, Removed: db.rowsRemoved(),
	})
	if err != nil {
		return nil, fmt.Errorf("ebb: expiry: %w", err)
	}
	db.st = exp
	leases, err := db.newLeases()
	if err != nil {
		return nil, fmt.Errorf("ebb: leases: %w", err)
	}
	if db.indexes, err = timeseries.New(ctx, db.st, timeseries.Options{
		Now: o.Now, Logger: o.Logger, Registerer: o.Registerer,
		ReconcileInterval: o.ReconcileInterval, CacheTTL: o.CacheTTL,
		// A crashed manager is replaced within two lease periods; the
		// runway must outlast that.
		MinRunway: 2 * o.LeaseDuration,
		// And no more indexes, nor shards, than its passes can keep.
		VisitBudget:    shardmgr.DefaultVisitBudget,
		MaxTotalShards: shardmgr.MaxTotalShards,
		MaxPartitions:  o.MaxReadPartitions,
		ArchiveOpen:    o.ArchiveOpener,
		// Every action the manager applies is fenced by its lease.
		Fence:      leases[RoleShardManager].Fence,
		BeforeDrop: db.shardDropping(),
	}); err != nil {
		return nil, fmt.Errorf("ebb: indexes: %w", err)
	}
	if db.migrations, err = migrate.New(ctx, db.st, db.indexes, migrate.Options{
		Now: o.Now, Logger: o.Logger, Registerer: o.Registerer, CacheTTL: o.CacheTTL, Open: o.LegacyOpener,
	}); err != nil {
		return nil, fmt.Errorf("ebb: migrations: %w", err)
	}
	if db.rewriter, err = newRewriter(db); err != nil {
		return nil, err
	}
	if db.tables, err = multitable.New(ctx, db.st, multitable.Options{
		Now: o.Now, Logger: o.Logger, Registerer: o.Registerer, CacheTTL: o.CacheTTL,
		RewriteStarted: db.rewriter.started,
	}); err != nil {
		return nil, fmt.Errorf("ebb: shared tables: %w", err)
	}
	if db.lists, err = lists.New(ctx, db.st, lists.Options{
		Now: o.Now, Logger: o.Logger, Registerer: o.Registerer, CacheTTL: o.CacheTTL,
		RewriteStarted: db.rewriter.started,
	}); err != nil {
		return nil, fmt.Errorf("ebb: lists: %w", err)
	}
	if err := db.startRoles(leases); err != nil {
		return nil, err
	}
	return db, nil
}

// Indexes returns the time-sharded indexes.
func (db *DB) Indexes() *timeseries.Service { return db.indexes }

// Lists returns the feature-store lists.
func (db *DB) Lists() *lists.Service { return db.lists }

// Tables returns the shared tables: many logical tables in one physical
// table.
func (db *DB) Tables() *multitable.Registry { return db.tables }

// Capabilities reports what the backend can do.
func (db *DB) Capabilities() store.Capabilities { return db.st.Capabilities() }

// Now is the DB's clock.
func (db *DB) Now() time.Time { return db.o.Now() }

// TableUsage is one physical table of the backend, for operators.
type TableUsage struct {
	Name string
	// Rows and Bytes are what is physically stored, expired rows not yet
	// deleted included; estimates on remote backends (Exact false).
	Rows, Bytes int64
	Exact       bool
	Capacity    store.Capacity
}

// PhysicalTables lists every table of the backend with what it stores.
func (db *DB) PhysicalTables(ctx context.Context) ([]TableUsage, error) {
	infos, err := db.st.Tables(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]TableUsage, 0, len(infos))
	for _, info := range infos {
		st, err := db.st.Stats(ctx, info.Spec.Name)
		if errors.Is(err, store.ErrTableNotFound) {
			continue // dropped since it was listed
		}
		if err != nil {
			return nil, fmt.Errorf("stats of %s: %w", info.Spec.Name, err)
		}
		out = append(out, TableUsage{Name: info.Spec.Name, Rows: st.Rows, Bytes: st.Bytes, Exact: st.Exact, Capacity: info.Capacity})
	}
	return out, nil
}

// SharedTableUsage reports every shared (logical) table with its live
// items and bytes.
func (db *DB) SharedTableUsage(ctx context.Context) ([]multitable.TableUsage, error) {
	return multitable.Usage(ctx, db.st)
}

// Ready reports whether the DB can serve: the backend answers and takes
// writes (the embedded store has had no disk fault), and the
// shard manager has completed a pass here or runs on another replica, so
// shards exist ahead. It returns an error saying what is missing.
func (db *DB) Ready(ctx context.Context) error {
	if _, err := db.st.Tables(ctx, store.MetaTable); err != nil {
		return fmt.Errorf("backend not answering: %w", err)
	}
	// A backend that refuses writes after a disk fault, or found a corrupt
	// block, is not ready, so that a load balancer sends traffic
	// elsewhere; it still serves what it can read.
	if h, ok := store.As[store.HealthReporter](db.st); ok {
		if err := h.Health(); err != nil {
			return err
		}
	}
	if db.managerRan.Load() || db.o.NoBackground {
		return nil
	}
	if r, ok := db.roles[RoleShardManager]; ok {
		if st := r.lease.Status(); st.Record.Holder != "" && st.Record.Holder != db.o.ReplicaID && st.Record.Expires.After(db.o.Now()) {
			return nil // another replica runs it
		}
	}
	return errors.New("the shard manager has not completed a pass yet")
}

// Close stops the background roles and waits for them, gives up their
// leases so that another replica takes over at once, and closes the store.
// It is safe to call more than once; every call returns the first call's
// result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		if db.cancel != nil {
			db.cancel()
		}
		db.wg.Wait()
		if db.migrations != nil {
			_ = db.migrations.Close() // stops backfills; their checkpoints keep their progress
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var errs []error
		for _, name := range roleNames {
			r, ok := db.roles[name]
			if !ok {
				continue
			}
			if err := r.lease.Release(ctx); err != nil {
				errs = append(errs, fmt.Errorf("release %s lease: %w", r.name, err))
			}
		}
		errs = append(errs, db.closeStores())
		db.unregisterMetrics()
		db.closeErr = errors.Join(errs...)
	})
	return db.closeErr
}

// unregisterMetrics unregisters every collector Open registered, so that
// the registry may serve a DB opened again.
func (db *DB) unregisterMetrics() {
	if db.metrics != nil {
		db.metrics.UnregisterAll()
	}
}

// closeStores closes the chain: each decorator closes the store it wraps,
// so closing the outermost closes the expiry decorator, then the meter,
// then the backend, each once.
func (db *DB) closeStores() error {
	return db.st.Close()
}

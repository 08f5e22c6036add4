package timeseries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
)

// metaKind is the ebb_meta kind holding index configs, keyed by name.
const metaKind = "index"

// DefaultCacheTTL is how long the Service trusts its cached index configs
// and shard lists when Options.CacheTTL is zero: store.DefaultCacheTTL,
// ebb's one bound on acting on configuration another replica changed.
const DefaultCacheTTL = store.DefaultCacheTTL

// Options configures a Service.
type Options struct {
	// Now is the clock for expiry and for the manager. Nil means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the index and manager metrics; nil keeps them
	// unexported.
	Registerer prometheus.Registerer
	// ReconcileInterval is the manager loop's interval; zero means
	// shardmgr.DefaultInterval.
	ReconcileInterval time.Duration
	// Guards for the manager; zero values take shardmgr's defaults.
	Guards shardmgr.Guards
	// MinRunway refuses, at Create, an index whose runway (Runway shards of
	// TableBucket) is shorter: the time the manager may be away (a
	// failover of its lease, a restart) without writes getting no_shard.
	// Zero checks nothing.
	MinRunway time.Duration
	// VisitBudget is the time one shard-manager pass may spend on one
	// index. The manager visits every index once per pass and passes run
	// every half of the narrowest table bucket; Create refuses an index
	// (or a change) after which the indexes, at VisitBudget each, would
	// not fit in that half: with 500 ms, at most one index per second of
	// the narrowest table bucket. Zero checks nothing.
	VisitBudget time.Duration
	// MaxTotalShards refuses, at Create, an index (or a change) after
	// which the indexes would keep more shards in all (retention plus the
	// hot shard plus runway, in table buckets, per index) than this: every
	// shard is a table of the backend. Zero checks nothing.
	MaxTotalShards int64
	// CacheTTL bounds how stale the cached configs and shard lists may be
	// (other processes sharing the backend create and drop shards). A write
	// that misses the cache always refreshes it. Zero means
	// DefaultCacheTTL.
	CacheTTL time.Duration
	// Fence is the shard manager's fence (shardmgr.Options.Fence): its
	// lease's, where several processes share the backend, so that a
	// paused former holder acts on nothing. Nil fences nothing.
	Fence func(context.Context) error
	// BeforeDrop is called before the manager drops a shard
	// (shardmgr.Options.BeforeDrop), with the shard's archive when its
	// index keeps one.
	BeforeDrop func(ctx context.Context, index string, a shardmgr.Action, p shardmgr.Prepared) error
	// MaxPartitions bounds the partitions one Query visits (the read
	// budget): past it, Query answers with the events found so far, maybe
	// none, and a page token that resumes at the next partition. Zero
	// means DefaultMaxPartitions.
	MaxPartitions int
	// ArchiveOpen opens the targets of indexes' archive locations; nil
	// opens file:// locations alone (archive.OpenFile).
	ArchiveOpen archive.Opener
}

// DefaultMaxPartitions is the partitions one Query visits at most when
// Options.MaxPartitions is zero. Each visit is a read of the backend: on
// the embedded one 256 empty partitions took 1 ms
// (TestQueryVisitsAtMostTheBudget); on DynamoDB or CQL each is a request of
// a few milliseconds, so a page costs about a second at most, whatever the
// range and the index's partition_bucket. A read of six weeks of daily or
// hourly partitions (42 or 1,008 of them) takes one page or four.
const DefaultMaxPartitions = 256

// Service is the time-sharded index: index lifecycle, writes, reads and the
// shard manager. It is safe for concurrent use.
type Service struct {
	st      store.Store
	now     func() time.Time
	log     *slog.Logger
	ttl     time.Duration
	guards  shardmgr.Guards
	caps    store.Capabilities
	minRun  time.Duration
	maxPart int           // Options.MaxPartitions, defaulted
	visit   time.Duration // Options.VisitBudget
	maxAll  int64         // Options.MaxTotalShards
	mgr     *shardmgr.Manager
	arch    *archive.Archiver
	metrics *metrics

	adminMu sync.Mutex // serializes Create and Delete

	mu      sync.Mutex
	configs map[string]cachedConfig
	shards  map[string]cachedShards
	// restored caches the starts of each index's shards restored from
	// its archive (restoredStarts).
	restored map[string]cachedRestored

	bufs sync.Pool // of *writeBuf, Put's scratch space

	// ttlMode is the expiry mode of events with a TTL of their own (see
	// Event.TTL); ttlShards remembers the shards known to accept them.
	ttlMode   store.ExpiryMode
	ttlShards sync.Map // shard table name -> struct{}

	router atomic.Pointer[routerBox] // set while migrations may run (SetRouter)
}

type cachedConfig struct {
	cfg    Config
	loaded time.Time
}

type cachedShards struct {
	starts []int64 // shard starts, Unix ms, sorted
	loaded time.Time
}

// DefaultOptions returns the options New uses for zero fields.
func DefaultOptions() Options {
	return Options{ReconcileInterval: shardmgr.DefaultInterval, CacheTTL: DefaultCacheTTL, MaxPartitions: DefaultMaxPartitions}
}

// Validate reports options New refuses: negative durations and a
// negative MaxPartitions.
func (o Options) Validate() error {
	if o.MaxPartitions < 0 {
		return store.Errorf(store.ErrInvalid, "timeseries: Options.MaxPartitions %d is negative", o.MaxPartitions)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ReconcileInterval", o.ReconcileInterval}, {"MinRunway", o.MinRunway}, {"VisitBudget", o.VisitBudget}, {"CacheTTL", o.CacheTTL}} {
		if d.v < 0 {
			return store.Errorf(store.ErrInvalid, "timeseries: Options.%s %s is negative", d.name, d.v)
		}
	}
	if o.MaxTotalShards < 0 {
		return store.Errorf(store.ErrInvalid, "timeseries: Options.MaxTotalShards %d is negative", o.MaxTotalShards)
	}
	return nil
}

// New returns a Service over st, which holds the shards and the ebb_meta
// table (created if needed). Its manager does nothing until
// Manager().RunOnce; ebb.DB runs it in the background.
func New(ctx context.Context, st store.Store, opts Options) (*Service, error) {
	if st == nil {
		return nil, errors.New("timeseries: a Store is required")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := (store.Meta{S: st}).Ensure(ctx); err != nil {
		return nil, fmt.Errorf("timeseries: create %s: %w", store.MetaTable, err)
	}
	s := &Service{
		st:       st,
		now:      opts.Now,
		log:      opts.Logger,
		ttl:      opts.CacheTTL,
		guards:   opts.Guards,
		caps:     st.Capabilities(),
		ttlMode:  store.DefaultExpiryMode(st.Capabilities()),
		minRun:   opts.MinRunway,
		maxPart:  opts.MaxPartitions,
		visit:    opts.VisitBudget,
		maxAll:   opts.MaxTotalShards,
		metrics:  newMetrics(),
		configs:  map[string]cachedConfig{},
		shards:   map[string]cachedShards{},
		restored: map[string]cachedRestored{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.ttl <= 0 {
		s.ttl = DefaultCacheTTL
	}
	if s.maxPart == 0 {
		s.maxPart = DefaultMaxPartitions
	}
	arch, err := archive.New(archive.Options{
		Store: st, Open: opts.ArchiveOpen, TimeColumn: colTS,
		Now: s.now, Logger: s.log, Registerer: opts.Registerer,
	})
	if err != nil {
		return nil, err
	}
	s.arch = arch
	mgr, err := shardmgr.New(shardmgr.Options{
		Store:       st,
		Configs:     s.shardConfigs,
		Interval:    opts.ReconcileInterval,
		Now:         s.now,
		Logger:      s.log,
		Registerer:  opts.Registerer,
		Changed:     s.invalidateShards,
		Fence:       opts.Fence,
		BeforeDrop:  opts.BeforeDrop,
		PrepareDrop: s.prepareDrop,
	})
	if err != nil {
		return nil, err
	}
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("timeseries: register metrics: %w", err)
		}
	}
	s.mgr = mgr
	return s, nil
}

// Manager returns the shard manager, whose RunOnce is one reconcile pass.
func (s *Service) Manager() *shardmgr.Manager { return s.mgr }

// Create creates an index and, synchronously, its shards. It returns the
// index and whether it was created: an identical index is not an error
// (created is false, and its shards are reconciled anyway); one with a
// different config is ErrConflict.
func (s *Service) Create(ctx context.Context, cfg Config) (Index, bool, error) {
	cfg = cfg.WithDefaults()
	cfg.HeldRetention, cfg.Layouts = 0, nil
	if err := cfg.Validate(); err != nil {
		return Index{}, false, err
	}
	if cfg.Capacity.ColdAfter > 0 && !s.caps.Classes.Supported() {
		return Index{}, false, store.Errorf(store.ErrInvalid, "index %q: capacity cold_after: the %s backend has no table classes (DynamoDB has Standard-IA)", cfg.Name, s.caps.Backend)
	}
	if runway := time.Duration(cfg.Runway) * cfg.TableBucket; runway < s.minRun {
		return Index{}, false, store.Errorf(store.ErrInvalid, "index %q: a runway of %d shards of %s covers %s, less than the %s the shard manager may be away (a failover of its lease, a restart): "+
			"writes would get no_shard; raise runway to at least %d or widen table_bucket", cfg.Name, cfg.Runway, durfmt.Format(cfg.TableBucket), durfmt.Format(runway), durfmt.Format(s.minRun), (s.minRun+cfg.TableBucket-1)/cfg.TableBucket)
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	meta := store.Meta{S: s.st}
	if err := meta.Ensure(ctx); err != nil {
		return Index{}, false, fmt.Errorf("timeseries: create %s: %w", store.MetaTable, err)
	}
	old, err := s.loadConfig(ctx, cfg.Name)
	created := false
	if errors.Is(err, ErrIndexNotFound) {
		if err := s.checkBudget(ctx, cfg); err != nil {
			return Index{}, false, err
		}
		// Only if still absent: another process creating the same index
		// at the same moment either wins (and its config is compared
		// below) or loses to this one.
		doc, merr := json.Marshal(cfg)
		if merr != nil {
			return Index{}, false, fmt.Errorf("timeseries: encode config: %w", merr)
		}
		err = meta.CompareAndSwap(ctx, metaKind, cfg.Name, nil, doc)
		switch {
		case err == nil:
			created, old = true, cfg
		case errors.Is(err, store.ErrConflict):
			old, err = s.loadConfig(ctx, cfg.Name)
		default:
			return Index{}, false, fmt.Errorf("timeseries: save index %s: %w", cfg.Name, err)
		}
	}
	if err != nil {
		return Index{}, false, err
	}
	if !created {
		// A change the manager could not keep is refused like a new index.
		if len(old.changed(cfg)) > 0 {
			next := cfg
			next.HeldRetention = max(old.Retention, old.HeldRetention)
			if err := s.checkBudget(ctx, next); err != nil {
				return Index{}, false, err
			}
		}
		if cfg, err = s.change(ctx, old, cfg); err != nil {
			return Index{}, false, err
		}
	}
	s.cacheConfig(cfg)
	// Writes need the shards at once, not at the next tick.
	if _, _, err := s.mgr.Reconcile(ctx, s.shardConfig(cfg), shardmgr.RunOptions{}); err != nil {
		return Index{}, created, fmt.Errorf("timeseries: create shards of %s: %w", cfg.Name, err)
	}
	idx, err := s.describe(ctx, cfg)
	return idx, created, err
}

// Get returns an index with its shards.
func (s *Service) Get(ctx context.Context, name string) (Index, error) {
	if err := checkName(name); err != nil {
		return Index{}, err
	}
	cfg, err := s.loadConfig(ctx, name)
	if err != nil {
		return Index{}, err
	}
	return s.describe(ctx, cfg)
}

// List returns every index with its shards, sorted by name.
func (s *Service) List(ctx context.Context) ([]Index, error) {
	cfgs, err := s.listConfigs(ctx)
	if err != nil {
		return nil, err
	}
	// One listing of the catalog for every index: the remote backends'
	// Tables read their whole catalog whatever the prefix, so a listing
	// per index would cost indexes × tables.
	infos, err := s.st.Tables(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("timeseries: list shards: %w", err)
	}
	shardmgr.SortTables(infos)
	out := make([]Index, 0, len(cfgs))
	for _, cfg := range cfgs {
		out = append(out, s.describeFrom(cfg, shardmgr.TablesOf(infos, cfg.Name)))
	}
	return out, nil
}

// Delete drops every shard of an index and its config. The config goes
// first, so that no manager run re-creates shards while they are being
// dropped; if Delete fails half-way, calling it again drops the remaining
// shards.
func (s *Service) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	return s.mgr.Exclusive(func() error {
		cfg, err := s.loadConfig(ctx, name)
		found := err == nil
		if err != nil && !errors.Is(err, ErrIndexNotFound) {
			return err
		}
		// Without a config (a Delete that failed half-way), any canonical
		// "{name}_{seconds}" table is a leftover shard.
		sc := shardmgr.Config{Index: name, TableBucket: time.Second}
		if found {
			sc = s.shardConfig(cfg)
			if err := (store.Meta{S: s.st}).Delete(ctx, metaKind, name); err != nil {
				return fmt.Errorf("timeseries: delete index %s: %w", name, err)
			}
		}
		s.forget(name)
		infos, err := s.st.Tables(ctx, name+"_")
		if err != nil {
			return fmt.Errorf("timeseries: list shards of %s: %w", name, err)
		}
		var errs []error
		dropped := 0
		for _, info := range infos {
			if _, _, kind := shardmgr.ParseShard(sc, info.Spec.Name); kind != shardmgr.ShardOf {
				continue
			}
			if err := s.st.DropTable(ctx, info.Spec.Name); err != nil {
				errs = append(errs, fmt.Errorf("drop %s: %w", info.Spec.Name, err))
				continue
			}
			dropped++
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("timeseries: delete index %s: %w", name, err)
		}
		if !found && dropped == 0 {
			return notFound(name)
		}
		s.metrics.forget(name)
		s.mgr.ForgetSeries(name)
		if err := shardmgr.Forget(ctx, s.st, name); err != nil {
			return fmt.Errorf("timeseries: delete index %s: %w", name, err)
		}
		return nil
	})
}

// Reconcile plans (and unless ro.DryRun applies) the shard changes of one
// index now. The error is non-nil when an action failed; the plan and
// results are returned either way.
func (s *Service) Reconcile(ctx context.Context, name string, ro shardmgr.RunOptions) (shardmgr.Plan, []shardmgr.Result, error) {
	if err := checkName(name); err != nil {
		return shardmgr.Plan{}, nil, err
	}
	cfg, err := s.loadConfig(ctx, name)
	if err != nil {
		return shardmgr.Plan{}, nil, err
	}
	// An explicit plan or apply uses the retention as configured: the
	// drops a shortened retention lets go are made here, never in the
	// background.
	sc := s.shardConfig(cfg)
	sc.Retention = cfg.Retention
	plan, results, err := s.mgr.Reconcile(ctx, sc, ro)
	if ro.DryRun && err == nil {
		err = s.planRestored(ctx, &plan)
	}
	if err == nil && !ro.DryRun && cfg.HeldRetention != 0 {
		s.adminMu.Lock()
		defer s.adminMu.Unlock()
		released := cfg
		released.HeldRetention = 0
		prev, perr := json.Marshal(cfg)
		doc, derr := json.Marshal(released)
		if err = errors.Join(perr, derr); err == nil {
			err = store.Meta{S: s.st}.CompareAndSwap(ctx, metaKind, name, prev, doc)
		}
		if err != nil {
			return plan, results, fmt.Errorf("timeseries: release the held retention of %s: %w", name, err)
		}
		s.cacheConfig(released)
	}
	return plan, results, err
}

// ShardStats reports what one shard table holds, as the backend counts it
// (exactly on the embedded backend, estimates elsewhere).
func (s *Service) ShardStats(ctx context.Context, table string) (store.TableStats, error) {
	return s.st.Stats(ctx, table)
}

// change makes an existing index's config want and returns the config
// saved. A shortened retention is held (Config.HeldRetention) until an
// explicit apply; a changed table or partition bucket is a new layout
// epoch (Config.Layouts, relayout). Callers hold adminMu.
func (s *Service) change(ctx context.Context, old, want Config) (Config, error) {
	if len(old.changed(want)) == 0 {
		return old, nil
	}
	next := want
	next.Layouts = old.Layouts
	if kept := max(old.Retention, old.HeldRetention); next.Retention < kept {
		next.HeldRetention = kept
	}
	save := func() error {
		if old.TableBucket != want.TableBucket || old.PartitionBucket != want.PartitionBucket {
			// The shards as they are now: the boundary lies past every
			// one of them.
			starts, err := s.shardStarts(ctx, old, true)
			if err != nil {
				return err
			}
			if next.Layouts, err = old.relayout(want, s.now(), starts); err != nil {
				return err
			}
			if err := next.Validate(); err != nil {
				return store.Errorf(ErrLayoutChange, "%w", err)
			}
		}
		prev, err := json.Marshal(old)
		if err != nil {
			return fmt.Errorf("timeseries: encode config: %w", err)
		}
		doc, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("timeseries: encode config: %w", err)
		}
		// Against the config as read: a concurrent change by another
		// replica makes this one fail rather than overwrite it.
		if err := (store.Meta{S: s.st}).CompareAndSwap(ctx, metaKind, want.Name, prev, doc); err != nil {
			return fmt.Errorf("timeseries: change index %s: %w", want.Name, err)
		}
		return nil
	}
	// Under the manager's lock, so that no pass of this process creates
	// the first shard of a layout change this one replaces between the
	// listing of the shards and the save.
	if err := s.mgr.Exclusive(save); err != nil {
		return Config{}, err
	}
	s.log.Info("index changed", "index", want.Name, "fields", old.changed(want), "held_retention", next.HeldRetention, "layout", pendingLayout(next, s.now()))
	return next, nil
}

func (s *Service) shardConfig(cfg Config) shardmgr.Config {
	return cfg.shardConfig(s.guards, s.caps)
}

// shardConfigs feeds the manager loop: every index, read afresh.
func (s *Service) shardConfigs(ctx context.Context) ([]shardmgr.Config, error) {
	cfgs, err := s.listConfigs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]shardmgr.Config, len(cfgs))
	for i, c := range cfgs {
		out[i] = s.shardConfig(c)
	}
	return out, nil
}

// describe reports an index's shards as they are now.
func (s *Service) describe(ctx context.Context, cfg Config) (Index, error) {
	infos, err := s.st.Tables(ctx, cfg.Name+"_")
	if err != nil {
		return Index{}, fmt.Errorf("timeseries: list shards of %s: %w", cfg.Name, err)
	}
	return s.describeFrom(cfg, infos), nil
}

// describeFrom reports an index's shards from the tables listed under its
// prefix.
func (s *Service) describeFrom(cfg Config, infos []store.TableInfo) Index {
	now := s.now()
	idx := Index{Config: cfg, Shards: []ShardInfo{}}
	var starts []int64
	var last time.Time
	sc := s.shardConfig(cfg)
	for _, info := range infos {
		start, tb, kind := shardmgr.ParseShard(sc, info.Spec.Name)
		if kind != shardmgr.ShardOf {
			continue
		}
		end := start.Add(tb)
		state := StateHot
		switch {
		case !now.Before(end):
			state = StatePast
		case now.Before(start):
			state = StateFuture
		}
		idx.Shards = append(idx.Shards, ShardInfo{Table: info.Spec.Name, Start: start, End: end, State: state, Capacity: info.Capacity, Class: info.Class})
		starts = append(starts, start.UnixMilli())
		if end.After(last) {
			last = end
		}
	}
	slices.SortFunc(idx.Shards, func(a, b ShardInfo) int { return a.Start.Compare(b.Start) })
	if !last.IsZero() {
		idx.RunwayRemaining = max(last.Sub(now), 0)
	}
	slices.Sort(starts)
	s.mu.Lock()
	s.shards[cfg.Name] = cachedShards{starts: starts, loaded: now}
	s.mu.Unlock()
	return idx
}

// config returns an index's config, from the cache when fresh.
func (s *Service) config(ctx context.Context, name string) (Config, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.configs[name]
	s.mu.Unlock()
	if ok && now.Sub(c.loaded) < s.ttl && !now.Before(c.loaded) {
		return c.cfg, nil
	}
	if err := checkName(name); err != nil {
		return Config{}, err
	}
	return s.loadConfig(ctx, name)
}

// loadConfig reads an index's config from ebb_meta and caches it.
func (s *Service) loadConfig(ctx context.Context, name string) (Config, error) {
	doc, err := store.Meta{S: s.st}.Get(ctx, metaKind, name)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
		s.forget(name)
		return Config{}, notFound(name)
	case err != nil:
		return Config{}, fmt.Errorf("timeseries: load index %s: %w", name, err)
	}
	var cfg Config
	if err := json.Unmarshal(doc, &cfg); err != nil {
		return Config{}, fmt.Errorf("timeseries: index %s: corrupt config: %w", name, err)
	}
	s.cacheConfig(cfg)
	return cfg, nil
}

func (s *Service) listConfigs(ctx context.Context) ([]Config, error) {
	docs, err := store.Meta{S: s.st}.List(ctx, metaKind)
	if err != nil {
		return nil, fmt.Errorf("timeseries: list indexes: %w", err)
	}
	out := make([]Config, 0, len(docs))
	for name, doc := range docs {
		var cfg Config
		if err := json.Unmarshal(doc, &cfg); err != nil {
			// One corrupt document must not stop the others being managed.
			s.log.Error("index config is corrupt; skipped", "index", name, "err", err)
			continue
		}
		out = append(out, cfg)
	}
	slices.SortFunc(out, func(a, b Config) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

func (s *Service) cacheConfig(cfg Config) {
	now := s.now()
	s.mu.Lock()
	s.configs[cfg.Name] = cachedConfig{cfg: cfg, loaded: now}
	s.mu.Unlock()
}

// forget drops everything cached about an index.
func (s *Service) forget(name string) {
	s.mu.Lock()
	delete(s.configs, name)
	delete(s.shards, name)
	delete(s.restored, name)
	s.mu.Unlock()
}

func (s *Service) invalidateShards(name string) {
	s.mu.Lock()
	delete(s.shards, name)
	s.mu.Unlock()
}

// shardStarts returns the index's shard starts (Unix ms, sorted), from the
// cache unless it is stale or refresh is set.
func (s *Service) shardStarts(ctx context.Context, cfg Config, refresh bool) ([]int64, error) {
	now := s.now()
	if !refresh {
		s.mu.Lock()
		c, ok := s.shards[cfg.Name]
		s.mu.Unlock()
		if ok && now.Sub(c.loaded) < s.ttl && !now.Before(c.loaded) {
			return c.starts, nil
		}
	}
	infos, err := s.st.Tables(ctx, cfg.Name+"_")
	if err != nil {
		return nil, fmt.Errorf("timeseries: list shards of %s: %w", cfg.Name, err)
	}
	var starts []int64
	sc := s.shardConfig(cfg)
	for _, info := range infos {
		if start, _, kind := shardmgr.ParseShard(sc, info.Spec.Name); kind == shardmgr.ShardOf {
			starts = append(starts, start.UnixMilli())
		}
	}
	slices.Sort(starts)
	s.mu.Lock()
	s.shards[cfg.Name] = cachedShards{starts: starts, loaded: now}
	s.mu.Unlock()
	return starts, nil
}

func checkName(name string) error {
	if !shardmgr.IndexNamePattern.MatchString(name) {
		return store.Errorf(store.ErrInvalid, "index name %q must match %s", name, shardmgr.IndexNamePattern)
	}
	return nil
}

// notFound is ErrIndexNotFound (and so store.ErrNotFound) for one index,
// saying which.
func notFound(name string) error {
	return store.Mark(ErrIndexNotFound, "timeseries", fmt.Sprintf("index %q not found", name))
}

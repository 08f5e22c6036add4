package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// metaKind is the ebb_meta kind of migration states, keyed by index name;
// metaBackfill holds each index's backfill checkpoint apart, so that
// checkpoints and phase changes never contend.
const (
	metaKind     = "migration"
	metaBackfill = "migration_backfill"
)

// DefaultCacheTTL is how long a Service trusts its cached migration
// states when Options.CacheTTL is zero: a phase changed through another
// replica takes effect here within it. It is store.DefaultCacheTTL, ebb's
// one bound on acting on configuration another replica changed.
const DefaultCacheTTL = store.DefaultCacheTTL

// DefaultMismatchSample is how many mismatching keys a Service keeps per
// index when Options.MismatchSample is zero.
const DefaultMismatchSample = 100

// ErrNotMigrating is an index without a migration. It also matches
// store.ErrNotFound.
var ErrNotMigrating = store.Mark(store.ErrNotFound, "migrate", "index is not migrating")

// notMigrating is ErrNotMigrating for one index, saying which.
func notMigrating(index string) error {
	return store.Mark(ErrNotMigrating, "migrate", fmt.Sprintf("index %q has no migration", index))
}

// Opener opens the legacy source a config names.
type Opener func(ctx context.Context, cfg LegacyConfig) (Source, error)

// ErrNoOpener is a migration from a legacy source of a kind other than
// KindTable on a Service given no Options.Open: this process was built
// or configured without the opener of DynamoDB and CQL tables
// (package migrate/legacyopen). It also matches store.ErrInvalid.
var ErrNoOpener = errors.New("migrate: no opener of legacy sources outside ebb is configured")

// Options configures a Service.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the migration metrics; nil keeps them
	// unexported.
	Registerer prometheus.Registerer
	// CacheTTL bounds how stale the cached migration states may be; zero
	// means DefaultCacheTTL.
	CacheTTL time.Duration
	// Open opens legacy sources of kinds other than KindTable (which the
	// Service opens on its own store); nil refuses them with ErrNoOpener.
	Open Opener
	// MismatchSample bounds the mismatching keys kept per index for
	// inspection; zero means DefaultMismatchSample.
	MismatchSample int
	// Wait pauses a backfill to keep to its rate; nil waits on a timer.
	// Tests pass a clock-driven one.
	Wait func(ctx context.Context, d time.Duration) error
}

// Settings are what a migration is started with.
type Settings struct {
	Legacy LegacyConfig `json:"legacy"`
	// WriteLegacy makes ebb write every event to the legacy table too,
	// until cutover. Without it ebb never writes the legacy table, and
	// the application keeps writing it itself.
	WriteLegacy bool `json:"write_legacy"`
	// SamplePercent is the share of shadow-read queries also read from
	// the shards and compared: 0..100.
	SamplePercent float64 `json:"sample_percent"`
}

// State is an index's migration as stored in ebb_meta.
type State struct {
	Index string `json:"index"`
	Settings
	Phase Phase `json:"phase"`
	// StartedAt is when the migration began: dual writes since.
	StartedAt time.Time `json:"started_at"`
	// PhaseSince is when the current phase was entered.
	PhaseSince time.Time `json:"phase_since"`
	// CutoverAt is when cutover was last entered (ebb stopped writing the
	// legacy table); zero before.
	CutoverAt time.Time `json:"cutover_at,omitzero"`
	// History holds the last phase changes, oldest first.
	History []Change `json:"history"`
}

// Change is one phase change.
type Change struct {
	From   Phase     `json:"from"`
	To     Phase     `json:"to"`
	At     time.Time `json:"at"`
	Forced bool      `json:"forced,omitempty"`
}

const maxHistory = 20

// Service runs the migrations of a timeseries.Service's indexes. It
// installs itself as the index service's Router. It is safe for
// concurrent use; Close stops its backfills.
type Service struct {
	st      store.Store
	idx     *timeseries.Service
	now     func() time.Time
	log     *slog.Logger
	ttl     time.Duration
	open    Opener
	sample  int
	wait    func(ctx context.Context, d time.Duration) error
	metrics *metrics

	adminMu sync.Mutex // serializes phase changes made here

	mu       sync.Mutex
	states   map[string]cachedState
	sources  map[string]cachedSource
	counters map[string]*counters
	runs     map[string]*run // backfills running here

	ctx    context.Context // parent of background backfills
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool
}

type cachedState struct {
	st     *State // nil: no migration
	loaded time.Time
}

type cachedSource struct {
	key string // the config it was opened with
	src Source
}

// New returns a Service for idx's indexes, whose sources and states live in
// st (the store idx writes through), and installs it as idx's Router.
func New(ctx context.Context, st store.Store, idx *timeseries.Service, opts Options) (*Service, error) {
	if st == nil || idx == nil {
		return nil, errors.New("migrate: a Store and a timeseries.Service are required")
	}
	if opts.CacheTTL < 0 || opts.MismatchSample < 0 {
		return nil, store.Errorf(store.ErrInvalid, "migrate: negative CacheTTL or MismatchSample")
	}
	if err := (store.Meta{S: st}).Ensure(ctx); err != nil {
		return nil, fmt.Errorf("migrate: create %s: %w", store.MetaTable, err)
	}
	s := &Service{
		st: st, idx: idx, now: opts.Now, log: opts.Logger, ttl: opts.CacheTTL, open: opts.Open,
		sample: opts.MismatchSample, wait: opts.Wait, metrics: newMetrics(),
		states: map[string]cachedState{}, sources: map[string]cachedSource{},
		counters: map[string]*counters{}, runs: map[string]*run{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.ttl == 0 {
		s.ttl = DefaultCacheTTL
	}
	if s.sample == 0 {
		s.sample = DefaultMismatchSample
	}
	if s.wait == nil {
		s.wait = backoff.Sleep
	}
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("migrate: register metrics: %w", err)
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	idx.SetRouter(s)
	return s, nil
}

// Close stops the backfills running here (their checkpoints keep their
// progress), uninstalls the Router and closes the legacy sources that
// hold connections of their own. It is safe to call twice.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.idx.SetRouter(nil)
	s.mu.Lock()
	sources := s.sources
	s.sources = map[string]cachedSource{}
	s.mu.Unlock()
	for _, c := range sources {
		closeSource(c.src)
	}
	return nil
}

// Start begins migrating index from a legacy table, in phase ShadowWrite,
// and returns the state and whether it was created. Starting again with
// the same legacy table changes WriteLegacy and SamplePercent; another
// legacy table is a conflict (store.ErrConflict) until the migration is
// ended.
func (s *Service) Start(ctx context.Context, index string, set Settings) (State, bool, error) {
	cfg, err := s.idx.IndexConfig(ctx, index)
	if err != nil {
		return State{}, false, err
	}
	if err := set.Legacy.Validate(); err != nil {
		return State{}, false, err
	}
	if set.Legacy.Kind == KindTable {
		if err := checkTableName(set.Legacy.Table); err != nil {
			return State{}, false, err
		}
	}
	if set.SamplePercent < 0 || set.SamplePercent > 100 {
		return State{}, false, store.Errorf(store.ErrInvalid, "sample_percent %v must be within 0..100", set.SamplePercent)
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	old, prev, err := s.load(ctx, index)
	if err != nil {
		return State{}, false, err
	}
	if old != nil {
		a, _ := json.Marshal(old.Legacy)
		b, _ := json.Marshal(set.Legacy)
		if string(a) != string(b) {
			return State{}, false, store.Errorf(store.ErrConflict, "index %q already migrates from %s table %q; end that migration first", index, old.Legacy.Kind, old.Legacy.Table)
		}
	}
	// The source must open (the table exist, the mapping hold) before
	// anything routes to it.
	if _, err := s.openSource(ctx, index, set.Legacy); err != nil {
		return State{}, false, err
	}
	now := s.now()
	if old == nil {
		st := State{Index: cfg.Name, Settings: set, Phase: ShadowWrite, StartedAt: now, PhaseSince: now, History: []Change{}}
		if err := s.save(ctx, index, nil, st); err != nil {
			return State{}, false, err
		}
		s.log.Info("migration started", "index", index, "legacy", set.Legacy.Table, "kind", set.Legacy.Kind)
		return st, true, nil
	}
	next := *old
	next.WriteLegacy, next.SamplePercent = set.WriteLegacy, set.SamplePercent
	if next.WriteLegacy != old.WriteLegacy || next.SamplePercent != old.SamplePercent {
		if err := s.save(ctx, index, prev, next); err != nil {
			return State{}, false, err
		}
	}
	return next, false, nil
}

// SetPhase moves index's migration to phase under the rules of
// CheckTransition (force overrides them) and returns the new state.
func (s *Service) SetPhase(ctx context.Context, index string, to Phase, force bool) (State, error) {
	if _, err := ParsePhase(string(to)); err != nil {
		return State{}, err
	}
	cfg, err := s.idx.IndexConfig(ctx, index)
	if err != nil {
		return State{}, err
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	old, prev, err := s.load(ctx, index)
	if err != nil {
		return State{}, err
	}
	if old == nil {
		return State{}, notMigrating(index)
	}
	if old.Phase == to {
		return *old, nil
	}
	facts, err := s.facts(ctx, cfg, *old)
	if err != nil {
		return State{}, err
	}
	if err := CheckTransition(old.Phase, to, facts, force); err != nil {
		return State{}, err
	}
	next := *old
	now := facts.Now
	next.Phase, next.PhaseSince = to, now
	forced := CheckTransition(old.Phase, to, facts, false) != nil
	if to == Cutover {
		next.CutoverAt = now
	}
	next.History = append(append([]Change(nil), old.History...), Change{From: old.Phase, To: to, At: now, Forced: forced})
	if len(next.History) > maxHistory {
		next.History = next.History[len(next.History)-maxHistory:]
	}
	if err := s.save(ctx, index, prev, next); err != nil {
		return State{}, err
	}
	s.log.Info("migration phase changed", "index", index, "from", old.Phase, "to", to, "forced", forced)
	return next, nil
}

// End forgets index's migration: the index is served by its shards alone,
// as in cutover, and the legacy table is left as it is. Only a migration in
// cutover ends, unless forced.
func (s *Service) End(ctx context.Context, index string, force bool) error {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	old, _, err := s.load(ctx, index)
	if err != nil {
		return err
	}
	if old == nil {
		return notMigrating(index)
	}
	if old.Phase != Cutover && !force {
		return &TransitionError{From: old.Phase, To: "ended", Reason: "only a migration in cutover ends: the shards must serve alone first"}
	}
	s.stopRun(index)
	meta := store.Meta{S: s.st}
	if err := meta.Delete(ctx, metaKind, index); err != nil {
		return fmt.Errorf("migrate: end %s: %w", index, err)
	}
	if err := meta.Delete(ctx, metaBackfill, index); err != nil {
		return fmt.Errorf("migrate: end %s: %w", index, err)
	}
	s.mu.Lock()
	delete(s.states, index)
	src, hadSource := s.sources[index]
	delete(s.sources, index)
	delete(s.counters, index)
	s.mu.Unlock()
	if hadSource {
		closeSource(src.src)
	}
	s.metrics.forget(index)
	return nil
}

// State returns index's migration state, read afresh.
func (s *Service) State(ctx context.Context, index string) (State, error) {
	st, _, err := s.load(ctx, index)
	if err != nil {
		return State{}, err
	}
	if st == nil {
		return State{}, notMigrating(index)
	}
	return *st, nil
}

// States returns the migration state of every index that migrates,
// sorted by index, read afresh.
func (s *Service) States(ctx context.Context) ([]State, error) {
	docs, err := store.Meta{S: s.st}.List(ctx, metaKind)
	if err != nil {
		return nil, fmt.Errorf("migrate: list migrations: %w", err)
	}
	out := make([]State, 0, len(docs))
	for index, doc := range docs {
		var st State
		if err := json.Unmarshal(doc, &st); err != nil {
			return nil, fmt.Errorf("migrate: %s: corrupt migration state: %w", index, err)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b State) int { return strings.Compare(a.Index, b.Index) })
	return out, nil
}

// facts gathers what the phase rules need.
func (s *Service) facts(ctx context.Context, cfg timeseries.Config, st State) (Facts, error) {
	f := Facts{Now: s.now(), Retention: cfg.Retention, DualWritesSince: st.StartedAt}
	cp, _, err := s.loadCheckpoint(ctx, cfg.Name)
	if err != nil {
		return Facts{}, err
	}
	if cp != nil && cp.LastCopy != nil {
		f.LastCopyStartedAt = cp.LastCopy.StartedAt
	}
	f.LastShadowWriteFailure = s.counter(cfg.Name).lastWriteFailure()
	return f, nil
}

// load reads index's state from ebb_meta (nil when it has none), with the
// document as stored for a compare-and-swap, and caches it.
func (s *Service) load(ctx context.Context, index string) (*State, []byte, error) {
	doc, err := store.Meta{S: s.st}.Get(ctx, metaKind, index)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
		s.cache(index, nil)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: load %s: %w", index, err)
	}
	var st State
	if err := json.Unmarshal(doc, &st); err != nil {
		return nil, nil, fmt.Errorf("migrate: %s: corrupt migration state: %w", index, err)
	}
	s.cache(index, &st)
	return &st, doc, nil
}

// save stores st in place of prev (nil: only if absent).
func (s *Service) save(ctx context.Context, index string, prev []byte, st State) error {
	doc, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("migrate: encode state: %w", err)
	}
	if err := (store.Meta{S: s.st}).CompareAndSwap(ctx, metaKind, index, prev, doc); err != nil {
		if errors.Is(err, store.ErrConflict) {
			s.forgetState(index)
			return fmt.Errorf("migrate: %s changed meanwhile (another replica?); retry: %w", index, err)
		}
		return fmt.Errorf("migrate: save %s: %w", index, err)
	}
	s.cache(index, &st)
	return nil
}

func (s *Service) cache(index string, st *State) {
	s.mu.Lock()
	s.states[index] = cachedState{st: st, loaded: s.now()}
	s.mu.Unlock()
	if st != nil {
		s.metrics.setPhase(index, st.Phase)
	}
}

func (s *Service) forgetState(index string) {
	s.mu.Lock()
	delete(s.states, index)
	s.mu.Unlock()
}

// state returns index's state from the cache while fresh; nil when the
// index does not migrate.
func (s *Service) state(ctx context.Context, index string) (*State, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.states[index]
	s.mu.Unlock()
	if ok && now.Sub(c.loaded) < s.ttl && !now.Before(c.loaded) {
		return c.st, nil
	}
	st, _, err := s.load(ctx, index)
	return st, err
}

// source returns the open source of st, opening it on first use.
func (s *Service) source(ctx context.Context, st *State) (Source, error) {
	return s.openSource(ctx, st.Index, st.Legacy)
}

func (s *Service) openSource(ctx context.Context, index string, cfg LegacyConfig) (Source, error) {
	keyDoc, _ := json.Marshal(cfg)
	key := string(keyDoc)
	s.mu.Lock()
	c, ok := s.sources[index]
	s.mu.Unlock()
	if ok && c.key == key {
		return c.src, nil
	}
	var src Source
	var err error
	switch {
	case cfg.Kind == KindTable:
		src, err = OpenTable(ctx, s.st, cfg.Table)
	case s.open != nil:
		src, err = s.open(ctx, cfg)
	default:
		err = store.Errorf(store.ErrInvalid, "%w: legacy sources of kind %q are not available here", ErrNoOpener, cfg.Kind)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		// Close has closed the sources already: this one would leak.
		s.mu.Unlock()
		closeSource(src)
		return nil, fmt.Errorf("migrate: service closed: %w", store.ErrClosed)
	}
	c, ok = s.sources[index]
	if ok && c.key == key {
		// Opened meanwhile by another caller: keep that one.
		s.mu.Unlock()
		closeSource(src)
		return c.src, nil
	}
	s.sources[index] = cachedSource{key: key, src: src}
	s.mu.Unlock()
	if ok {
		closeSource(c.src)
	}
	return src, nil
}

// closeSource closes a source that holds resources of its own (a
// connection to another cluster): those implementing io.Closer.
func closeSource(src Source) {
	if c, ok := src.(io.Closer); ok {
		_ = c.Close()
	}
}

// legacyTTL is the expiry ebb gives rows it writes to the legacy table.
func legacyTTL(st *State, cfg timeseries.Config) time.Duration {
	if st.Legacy.TTL > 0 {
		return st.Legacy.TTL
	}
	return cfg.Retention
}

// WriteLegacy writes rows to index's legacy table, as asked (an import).
// A row without an expiry gets timestamp + the legacy TTL, as ebb's own
// legacy writes do; rows already expired are not written. It returns the
// rows written.
func (s *Service) WriteLegacy(ctx context.Context, index string, rows []Row) (int, error) {
	cfg, err := s.idx.IndexConfig(ctx, index)
	if err != nil {
		return 0, err
	}
	st, err := s.state(ctx, index)
	if err != nil {
		return 0, err
	}
	if st == nil {
		return 0, notMigrating(index)
	}
	src, err := s.source(ctx, st)
	if err != nil {
		return 0, err
	}
	now := s.now()
	ttl := legacyTTL(st, cfg)
	live := make([]Row, 0, len(rows))
	for _, r := range rows {
		if r.ExpiresAt.IsZero() {
			r.ExpiresAt = r.Timestamp.Truncate(time.Millisecond).Add(ttl)
		}
		if r.ExpiresAt.After(now) {
			live = append(live, r)
		}
	}
	if err := src.Write(ctx, live); err != nil {
		return 0, err
	}
	return len(live), nil
}

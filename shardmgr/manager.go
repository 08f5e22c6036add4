package shardmgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/promreg"
	"github.com/ebb-data/ebb/store"
)

// Errors of the manager.
var (
	// ErrFenced marks an action refused because this process no longer
	// holds the shard-manager lease (Options.Fence failed).
	ErrFenced = errors.New("shardmgr: refused: not the lease holder")
)

// DefaultInterval is the reconcile interval when Options.Interval is zero.
const DefaultInterval = 30 * time.Second

// Options configures a Manager.
type Options struct {
	// Store holds the shards and the ebb_meta table. Required.
	Store store.Store
	// Configs returns every index to manage, read afresh each run so that
	// indexes created or deleted elsewhere are picked up. Required.
	Configs func(context.Context) ([]Config, error)
	// Interval between runs. Zero means DefaultInterval.
	Interval time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the manager's metrics; nil keeps them
	// unexported.
	Registerer prometheus.Registerer
	// Changed, if set, is called after a run that created or dropped
	// shards of an index, so that callers caching shard lists refresh.
	Changed func(index string)
	// Fence, if set, is called by RunOnce before each action it applies
	// (the background path). It returns nil while this process may act
	// and an error when another process has taken over the manager role
	// (a lease with a newer epoch); the action is then refused. Several
	// processes sharing a backend set it to their lease's fence so that a
	// paused old leader never drops or resizes anything.
	Fence func(context.Context) error
	// A drop has two hooks, one for each depth of a run, and what the
	// first made ready reaches the second:
	//
	//	PrepareDrop  before the run applies anything, after a fence
	//	             check: may hold the drop; returns a Prepared
	//	BeforeDrop   inside apply, after the drop's own fence, just
	//	             before DropTable: handed that Prepared
	//
	// PrepareDrop, if set, is called for each pending drop before the
	// run applies its actions (and not for a dry run); an error holds the
	// drop: it is deferred with the error as its reason, logged, counted
	// in ebb_shard_drops_held, and tried again at the next run. The
	// archive of a shard (Config.Archive) is made here, so that no shard
	// is dropped before its copy is kept, and its Prepared names it.
	PrepareDrop func(ctx context.Context, cfg Config, a Action) (Prepared, error)
	// BeforeDrop, if set, is called before each shard is dropped, after
	// the fence, with what PrepareDrop returned for that drop (the zero
	// Prepared without PrepareDrop); an error holds the drop (it is
	// retried next run). The log of expirations records the drop there,
	// with the archive's location.
	BeforeDrop func(ctx context.Context, index string, a Action, p Prepared) error
}

// Prepared is what Options.PrepareDrop made ready for one drop, which the
// run hands to Options.BeforeDrop when it applies the drop.
type Prepared struct {
	// Archive is the URL of the shard's verified archive (its Parquet
	// object); "" when the index keeps no archive.
	Archive string
}

// RunOptions changes one Reconcile.
type RunOptions struct {
	// DryRun plans without applying or recording anything.
	DryRun bool
	// AllowClockJump confirms a clock jump: drops the guard would defer
	// are applied and the run is recorded.
	AllowClockJump bool
	// Fence, if set, is checked before each action; see Options.Fence.
	Fence func(context.Context) error
	// DropStats reads the rows and bytes of every shard a drop would
	// destroy (Action.Destroys), so that a person can see them before
	// applying. It costs one Stats call per drop.
	DropStats bool
}

// Manager reconciles every index: RunOnce is one pass. It owns no loop;
// its owner (ebb.DB's shard-manager role) runs passes every NextRun, under
// a lease. It is safe for concurrent use; runs are serialized.
type Manager struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	series  runwaySeries

	runMu     sync.Mutex    // serializes runs
	metaReady bool          // guarded by runMu
	shortest  time.Duration // guarded by runMu: the narrowest table bucket seen by RunOnce
	// ends is, per index, the end of its last shard as its latest
	// reconcile left it; guarded by runMu. RunOnce checks them against
	// the clock once the whole pass is over.
	ends map[string]time.Time
	// touched names the indexes a Reconcile or Forget outside the pass
	// changed since the running pass read its snapshot; guarded by runMu.
	// The pass reads those afresh instead of trusting the snapshot.
	touched map[string]bool
	// held is, per index, why each drop Options.PrepareDrop refused at the
	// index's last reconcile is held, so that a dry run's plan says it
	// too; guarded by runMu.
	held map[string]map[string]string
}

// New returns a Manager; it does nothing until RunOnce.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil || opts.Configs == nil {
		return nil, errors.New("shardmgr: Options.Store and Options.Configs are required")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	m := &Manager{
		opts:    opts,
		log:     opts.Logger,
		now:     opts.Now,
		metrics: newMetrics(),
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if opts.Registerer != nil {
		if err := m.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("shardmgr: register metrics: %w", err)
		}
	}
	return m, nil
}

// NextRun is how long the loop may wait before the next RunOnce: the
// configured Interval, or half the narrowest shard of any index if that is
// shorter, so that the manager's own schedule never lets a runway shrink
// by more than half a shard below what the index asks for.
func (m *Manager) NextRun() time.Duration {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	next := m.opts.Interval
	if half := m.shortest / 2; half > 0 && half < next {
		next = half
	}
	return next
}

// RunOnce reconciles every index once. Indexes are independent: one that
// fails does not stop the others; the errors are joined.
func (m *Manager) RunOnce(ctx context.Context) error {
	m.runMu.Lock()
	fence := m.opts.Fence
	m.runMu.Unlock()
	cfgs, err := m.opts.Configs(ctx)
	if err != nil {
		m.metrics.failures.Inc()
		return fmt.Errorf("shardmgr: list indexes: %w", err)
	}
	m.pruneSeries(cfgs)
	var shortest time.Duration
	for _, cfg := range cfgs {
		for _, tb := range TableBuckets(cfg) {
			if shortest == 0 || tb < shortest {
				shortest = tb
			}
		}
	}
	listed := make(map[string]bool, len(cfgs))
	for _, cfg := range cfgs {
		listed[cfg.Index] = true
	}
	m.runMu.Lock()
	m.shortest = shortest
	for index := range m.ends {
		if !listed[index] {
			delete(m.ends, index)
		}
	}
	m.runMu.Unlock()
	start := m.now()
	if len(cfgs) == 0 {
		// Nothing to manage: no listing, no record, so that an idle
		// deployment without indexes reads and writes nothing more.
		m.checkPass(cfgs, start)
		m.metrics.lastSuccess.Set(float64(m.now().UnixNano()) / 1e9)
		return nil
	}
	m.runMu.Lock()
	m.touched = map[string]bool{}
	m.runMu.Unlock()
	snap, err := observeAll(ctx, m.opts.Store)
	if err != nil {
		m.metrics.failures.Inc()
		return err
	}
	var errs []error
	jumped := false
	for _, cfg := range cfgs {
		plan, err := m.reconcilePass(ctx, cfg, snap, fence)
		if err != nil {
			errs = append(errs, err)
		}
		jumped = jumped || plan.ClockJump
	}
	if !jumped {
		// The pass record stands for every index's last run, so it is
		// written only by a pass whose clock no guard refused.
		if err := m.recordPass(ctx, start); err != nil {
			m.metrics.failures.Inc()
			errs = append(errs, err)
		}
	}
	m.checkPass(cfgs, start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.metrics.lastSuccess.Set(float64(m.now().UnixNano()) / 1e9)
	return nil
}

// checkPass says when a pass could not keep every runway. Each index's
// runway is checked at its own reconcile, but a pass over many indexes
// can take long enough that the first ones visited have run short by the
// time it ends, and the next visit is a whole pass away: so every runway
// is checked again against the clock at the end of the pass, and a pass
// longer than the wait the narrowest shard allows between passes is
// reported as such.
func (m *Manager) checkPass(cfgs []Config, start time.Time) {
	end := m.now()
	took := end.Sub(start)
	m.metrics.passSeconds.Set(took.Seconds())
	if half := m.shortestHalf(); half > 0 && took > half {
		m.log.Warn("shard-manager pass took longer than the wait its narrowest shard allows between passes: runways shrink faster than the manager extends them",
			"took", took, "allowed", half, "indexes", len(cfgs))
	}
	m.runMu.Lock()
	defer m.runMu.Unlock()
	short := 0
	for _, cfg := range cfgs {
		last, ok := m.ends[cfg.Index]
		if !ok {
			continue
		}
		if left, tb := last.Sub(end), lastWidth(cfg, last); left < tb {
			short++
			m.metrics.runwayShort.Inc()
			m.log.Error("runway below one shard: writes will be refused as no_shard", "index", cfg.Index, "runway_remaining", left, "table_bucket", tb, "at", "end of pass", "pass_took", took)
		}
	}
	m.metrics.runwayShortIndexes.Set(float64(short))
}

// shortestHalf is half the narrowest table bucket seen by RunOnce; zero
// before the first pass.
func (m *Manager) shortestHalf() time.Duration {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	return m.shortest / 2
}

// Reconcile runs observe, plan and (unless DryRun) apply for one index and
// returns the plan and what applying it did. The error is non-nil when
// observing failed or any action failed; the results still tell which
// actions were applied.
func (m *Manager) Reconcile(ctx context.Context, cfg Config, ro RunOptions) (Plan, []Result, error) {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	now := m.now()
	if !ro.DryRun && m.touched != nil {
		m.touched[cfg.Index] = true
	}
	plan, results, err := m.reconcile(ctx, cfg, now, ro, nil)
	if err != nil && !ro.DryRun {
		m.metrics.failures.Inc()
		m.log.Warn("reconcile of index failed", "index", cfg.Index, "err", err)
	}
	return plan, results, err
}

// reconcilePass is one index's reconcile within RunOnce, planned from the
// pass's snapshot instead of reads of its own.
func (m *Manager) reconcilePass(ctx context.Context, cfg Config, snap *snapshot, fence func(context.Context) error) (Plan, error) {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	now := m.now()
	var plan Plan
	o, err := snap.of(cfg.Index)
	if m.touched[cfg.Index] {
		o, err = observeOne(ctx, m.opts.Store, cfg.Index)
	}
	if err == nil {
		plan, _, err = m.reconcile(ctx, cfg, now, RunOptions{Fence: fence}, &o)
	}
	if err != nil {
		m.metrics.failures.Inc()
		m.log.Warn("reconcile of index failed", "index", cfg.Index, "err", err)
	}
	return plan, err
}

func (m *Manager) recordPass(ctx context.Context, at time.Time) error {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if err := m.ensureMeta(ctx); err != nil {
		return err
	}
	return recordPass(ctx, m.opts.Store, at)
}

// reconcile plans and applies one index's actions. pass is the index's
// part of a pass's snapshot; nil (Reconcile outside a pass) reads the
// index's tables and records itself.
func (m *Manager) reconcile(ctx context.Context, cfg Config, now time.Time, ro RunOptions, pass *observed) (Plan, []Result, error) {
	if err := cfg.Validate(); err != nil {
		return Plan{}, nil, err
	}
	o := pass
	if o == nil {
		one, err := observeOne(ctx, m.opts.Store, cfg.Index)
		if err != nil {
			return Plan{}, nil, err
		}
		o = &one
	}
	observed, last := o.shards, o.last
	if ro.AllowClockJump {
		last = LastRun{}
	}
	plan := NewPlan(cfg, now, observed, last)
	if ro.DropStats {
		for i := range plan.Actions {
			if a := &plan.Actions[i]; a.Op == OpDrop {
				st, err := m.opts.Store.Stats(ctx, a.Table)
				if err != nil {
					return Plan{}, nil, fmt.Errorf("shardmgr: size of %s: %w", a.Table, err)
				}
				a.Destroys = &st
			}
		}
	}
	if len(plan.Unrecognized) > 0 {
		m.log.Warn("tables with the index prefix are not its shards; left alone", "index", cfg.Index, "tables", plan.Unrecognized)
	}
	if ro.DryRun {
		for i := range plan.Actions {
			// A drop held at the last run is held until a run's hook lets
			// it go, so the plan shows it held, as the run would.
			if a := &plan.Actions[i]; a.Op == OpDrop && !a.Deferred && m.held[cfg.Index][a.Table] != "" {
				a.Deferred = true
				a.Reason = "held at the last run: " + m.held[cfg.Index][a.Table] + "; the next run tries again (" + a.Reason + ")"
			}
		}
		return plan, nil, nil
	}
	prepared := m.holdDrops(ctx, cfg, &plan, ro.Fence)
	if plan.ClockJump {
		m.log.Warn("clock moved forward beyond the guard; drops deferred", "index", cfg.Index, "now", now)
	}
	results := apply(ctx, m.opts.Store, plan, ro.Fence, prepared, m.opts.BeforeDrop)
	changed := false
	for _, r := range results {
		if errors.Is(r.Err, ErrFenced) {
			m.metrics.fenced.Inc()
			m.log.Warn("reconcile action refused: another process holds the shard-manager lease", "index", cfg.Index, "op", r.Action.Op, "table", r.Action.Table, "err", r.Err)
			continue
		}
		if r.Err != nil {
			m.log.Warn("reconcile action failed", "index", cfg.Index, "op", r.Action.Op, "table", r.Action.Table, "err", r.Err)
			continue
		}
		m.metrics.actions.WithLabelValues(string(r.Action.Op)).Inc()
		m.log.Info("reconcile action applied", "index", cfg.Index, "op", r.Action.Op, "table", r.Action.Table, "reason", r.Action.Reason)
		changed = changed || r.Action.Op == OpCreate || r.Action.Op == OpDrop
	}
	if changed && m.opts.Changed != nil {
		m.opts.Changed(cfg.Index)
	}
	if end := runwayEnd(cfg, observed, results); !end.IsZero() {
		left, tb := end.Sub(now), lastWidth(cfg, end)
		m.setRunway(cfg.Index, end, left, tb)
		if m.ends == nil {
			m.ends = map[string]time.Time{}
		}
		m.ends[cfg.Index] = end
		if left < tb {
			m.metrics.runwayShort.Inc()
			// Writes past the last shard get no_shard soon: the alert
			// EbbRunwayBelowOneShard (docs/prometheus/alerts.yml) fires
			// on the same condition.
			m.log.Error("runway below one shard: writes will be refused as no_shard", "index", cfg.Index, "runway_remaining", left, "table_bucket", tb)
		}
	}
	errs := []error{Failed(results)}
	if err := m.ensureMeta(ctx); err != nil {
		errs = append(errs, err)
	} else if err := record(ctx, m.opts.Store, cfg, plan, results, *o, ro.AllowClockJump, pass != nil); err != nil {
		errs = append(errs, err)
	}
	return plan, results, errors.Join(errs...)
}

// holdDrops calls Options.PrepareDrop before each pending drop and holds
// (defers) those it refuses, saying why; it returns, by table, what it
// prepared for the others.
func (m *Manager) holdDrops(ctx context.Context, cfg Config, plan *Plan, fence func(context.Context) error) map[string]Prepared {
	if m.opts.PrepareDrop == nil {
		return nil
	}
	prepared := map[string]Prepared{}
	held := map[string]string{}
	for i := range plan.Actions {
		a := &plan.Actions[i]
		if a.Op != OpDrop || a.Deferred {
			continue
		}
		if fence != nil && fence(ctx) != nil {
			continue // Apply refuses it
		}
		p, err := m.opts.PrepareDrop(ctx, cfg, *a)
		if err == nil {
			prepared[a.Table] = p
			continue
		}
		why := err.Error()
		if msg, ok := store.ClientMessage(err); ok {
			why = msg
		}
		a.Deferred = true
		a.Reason = "held: " + why + " (" + a.Reason + ")"
		held[a.Table] = why
		m.log.Warn("shard drop held", "index", cfg.Index, "table", a.Table, "err", err)
	}
	if m.held == nil {
		m.held = map[string]map[string]string{}
	}
	if len(held) == 0 {
		delete(m.held, cfg.Index)
	} else {
		m.held[cfg.Index] = held
	}
	m.setHeld()
	return prepared
}

// setHeld exports how many drops are held over every index; the caller
// holds runMu.
func (m *Manager) setHeld() {
	n := 0
	for _, h := range m.held {
		n += len(h)
	}
	m.metrics.held.Set(float64(n))
}

func (m *Manager) ensureMeta(ctx context.Context) error {
	if m.metaReady {
		return nil
	}
	if err := (store.Meta{S: m.opts.Store}).Ensure(ctx); err != nil {
		return fmt.Errorf("shardmgr: create %s: %w", store.MetaTable, err)
	}
	m.metaReady = true
	return nil
}

// Forget removes an index's records and metric series, after the index
// was deleted.
func (m *Manager) Forget(ctx context.Context, index string) error {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	m.ForgetSeries(index)
	delete(m.ends, index)
	delete(m.held, index)
	m.setHeld()
	if m.touched != nil {
		m.touched[index] = true
	}
	return Forget(ctx, m.opts.Store, index)
}

// Exclusive runs f while no reconcile runs, so that deleting an index
// cannot race with a run re-creating its shards.
func (m *Manager) Exclusive(f func() error) error {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	return f()
}

type metrics struct {
	runway      *prometheus.GaugeVec
	runwayEnd   *prometheus.GaugeVec
	tableBucket *prometheus.GaugeVec
	lastSuccess prometheus.Gauge
	actions     *prometheus.CounterVec
	failures    prometheus.Counter
	fenced      prometheus.Counter
	// runwayShort counts each time an index was found with less than one
	// shard of runway: at its reconcile or at the end of a pass.
	runwayShort        prometheus.Counter
	runwayShortIndexes prometheus.Gauge
	passSeconds        prometheus.Gauge
	held               prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		runway: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_shard_runway_seconds",
			Help: "Time left, at the shard manager's last pass over the index, until the end of its last existing shard.",
		}, []string{"index"}),
		runwayEnd: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_shard_runway_end_timestamp_seconds",
			Help: "Unix time at which the index's last existing shard ends: writes past it are refused as no_shard. Unlike the runway it needs no manager run to move towards now.",
		}, []string{"index"}),
		tableBucket: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_shard_table_bucket_seconds",
			Help: "Width of one shard of the index (its table_bucket), the threshold of the low-runway alert.",
		}, []string{"index"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ebb_reconcile_last_success_timestamp_seconds",
			Help: "Unix time of the last reconcile run that succeeded for every index.",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_reconcile_actions_total",
			Help: "Shard actions applied, by op (create, drop, set_capacity, prewarm).",
		}, []string{"op"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_reconcile_failures_total",
			Help: "Reconciles of an index (or listings of indexes) that failed.",
		}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_reconcile_fenced_total",
			Help: "Shard actions refused because another process had taken over the shard-manager lease.",
		}),
		runwayShort: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_reconcile_runway_short_total",
			Help: "Times an index was found with less than one shard of runway left, at its reconcile or at the end of a shard-manager pass: writes past its last shard get no_shard.",
		}),
		runwayShortIndexes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ebb_reconcile_runway_short_indexes",
			Help: "Indexes with less than one shard of runway left at the end of the last shard-manager pass.",
		}),
		passSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ebb_reconcile_pass_seconds",
			Help: "How long the last shard-manager pass over every index took; above half the narrowest table_bucket, runways shrink.",
		}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ebb_shard_drops_held",
			Help: "Drops of expired shards held, over every index, at each index's last reconcile: an archive that failed or did not verify, or a shard restored from its archive. The plan and the log say why.",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	// Every op is exported from the start, at zero, so that rates and
	// alerts see the first action.
	for _, op := range []Op{OpCreate, OpDrop, OpSetCapacity, OpPrewarm} {
		m.actions.WithLabelValues(string(op))
	}
	return promreg.Register(r, m.runway, m.runwayEnd, m.tableBucket, m.lastSuccess, m.actions, m.failures, m.fenced, m.runwayShort, m.runwayShortIndexes, m.passSeconds, m.held)
}

// lastWidth is the width of the shard ending at end, the last of the
// runway: across a layout change, the runway is short when less than that
// shard's width is left, whichever layout it has.
func lastWidth(cfg Config, end time.Time) time.Duration {
	_, tb := ShardAt(cfg, end.Add(-time.Second))
	return tb
}

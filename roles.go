package ebb

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/lease"
	"github.com/ebb-data/ebb/internal/loop"
	"github.com/ebb-data/ebb/internal/promreg"
	"github.com/ebb-data/ebb/store"
)

// Role names, as they appear in leases, logs, metrics and the cluster view.
const (
	RoleShardManager = "shard-manager"
	RoleSweeper      = "sweeper"
)

// roleNames is every role, in the order the cluster view lists them.
var roleNames = []string{RoleShardManager, RoleSweeper}

// role is one background job that exactly one replica runs at a time: it
// keeps a lease and, while holding it, runs pass every interval.
type role struct {
	name     string
	lease    *lease.Lease
	interval time.Duration
	// next, if set, says how long to wait after a successful pass
	// instead of interval (the manager follows the narrowest runway).
	next func() time.Duration
	pass func(ctx context.Context) error
	// wake, if set, runs a pass at once when it receives (the sweeper's
	// wake-up by a write due sooner than it sleeps).
	wake <-chan struct{}
	// gained, if set, is called when this replica gains the lease (the
	// TTL rewriter, which shares the shard manager's, then resumes the
	// jobs left unfinished).
	gained  func()
	log     *slog.Logger
	held    prometheus.Gauge
	epoch   prometheus.Gauge
	trigger chan struct{}
}

type roleMetrics struct {
	held, epoch *prometheus.GaugeVec
}

func newRoleMetrics(reg prometheus.Registerer) (*roleMetrics, error) {
	m := &roleMetrics{
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_lease_held",
			Help: "1 when this replica holds the role's lease, 0 otherwise.",
		}, []string{"role"}),
		epoch: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_lease_epoch",
			Help: "The role's lease epoch (fencing token) as last seen by this replica.",
		}, []string{"role"}),
	}
	if err := promreg.Register(reg, m.held, m.epoch); err != nil {
		return nil, fmt.Errorf("ebb: register lease metrics: %w", err)
	}
	return m, nil
}

// newLeases creates every role's lease, keyed by role name. They come
// before the features, so that the shard manager is built with its
// lease's fence.
func (db *DB) newLeases() (map[string]*lease.Lease, error) {
	o := db.o
	exclusive := !db.st.Capabilities().SharedAcrossProcesses
	// Leases renew below the expiry decorator, through the meter when there
	// is one, so that their writes count as the catalog's cost.
	exp, _ := store.As[*expiry.Store](db.st)
	leaseStore := exp.Unwrap()
	leases := make(map[string]*lease.Lease, len(roleNames))
	for _, name := range roleNames {
		l, err := lease.New(lease.Options{
			Store: leaseStore, Role: name, Holder: o.ReplicaID, Duration: o.LeaseDuration,
			Exclusive: exclusive, Now: o.Now,
		})
		if err != nil {
			return nil, err
		}
		leases[name] = l
	}
	return leases, nil
}

// startRoles creates the shard-manager and sweeper roles on their leases
// and, unless NoBackground, starts them.
func (db *DB) startRoles(leases map[string]*lease.Lease) error {
	o := db.o
	m, err := newRoleMetrics(o.Registerer)
	if err != nil {
		return err
	}
	mgr := db.indexes.Manager()
	managerPass := func(ctx context.Context) error {
		err := mgr.RunOnce(ctx)
		if err == nil {
			db.managerRan.Store(true)
		}
		return err
	}
	db.roles = make(map[string]*role, len(roleNames))
	mk := func(name string, interval time.Duration, next func() time.Duration, pass func(context.Context) error) {
		db.roles[name] = &role{
			name: name, lease: leases[name], interval: interval, next: next, pass: pass,
			log: o.Logger.With("role", name), held: m.held.WithLabelValues(name), epoch: m.epoch.WithLabelValues(name),
			trigger: make(chan struct{}, 1),
		}
	}
	mk(RoleShardManager, o.ReconcileInterval, mgr.NextRun, managerPass)
	db.roles[RoleShardManager].gained = db.rewriter.started
	exp, _ := store.As[*expiry.Store](db.st)
	// The sweeper sleeps until the earliest due time it knows of, and a
	// write due sooner wakes it.
	sw := exp.Sweeper()
	mk(RoleSweeper, o.SweepInterval, sw.Next, sw.Pass)
	db.roles[RoleSweeper].wake = sw.Wake()
	if o.NoBackground {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	db.cancel = cancel
	for _, name := range roleNames {
		r := db.roles[name]
		db.wg.Go(func() { r.run(ctx) })
	}
	db.wg.Go(func() { db.rewriter.run(ctx, leases[RoleShardManager]) })
	return nil
}

// run keeps the lease and, while it is held, runs passes. It returns when
// ctx is done. Renewal runs in its own goroutine so that a long pass never
// lets the lease lapse; a pass runs under a context that is cancelled as
// soon as the lease is lost.
func (r *role) run(ctx context.Context) {
	var (
		mu      sync.Mutex
		holdCtx context.Context
		release context.CancelFunc = func() {}
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	defer func() { mu.Lock(); release(); mu.Unlock() }()

	// The wake-ups, forwarded to the loop's trigger.
	if r.wake != nil {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-r.wake:
				}
				select {
				case r.trigger <- struct{}{}:
				default:
				}
			}
		})
	}

	// The renewer: a renewal every half lease, so that an idle replica
	// writes at most two per lease period per role. An attempt may take a
	// sixth of the lease, and a failed one is retried a tenth of the
	// lease later, so that a second try fits before the lease lapses
	// (lease.Options.Margin, a fifth, before it ends).
	wg.Go(func() {
		every, timeout, retry := r.lease.Duration()/2, r.lease.Duration()/6, r.lease.Duration()/10
		t := time.NewTimer(0)
		defer t.Stop()
		was := false
		due := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// A renewal far behind schedule means this process was
			// stopped (SIGSTOP, a VM pause, a long GC) or starved: its
			// lease may have passed to another replica meanwhile.
			if late := time.Since(due); was && late > r.lease.Duration()/2 {
				r.log.Warn("lease renewal ran late: this process was paused or starved; it acts on nothing until it holds the lease again", "late", late.Round(time.Millisecond))
			}
			actx, cancel := context.WithTimeout(ctx, timeout)
			held, err := r.lease.Acquire(actx)
			cancel()
			if err != nil && ctx.Err() == nil {
				r.log.Warn("lease renewal failed", "err", err)
			}
			st := r.lease.Status()
			r.epoch.Set(float64(st.Record.Epoch))
			switch {
			case held && !was:
				r.held.Set(1)
				r.log.Info("lease gained", "holder", st.Record.Holder, "epoch", st.Record.Epoch, "expires", st.Record.Expires)
				mu.Lock()
				holdCtx, release = context.WithCancel(ctx)
				mu.Unlock()
				select {
				case r.trigger <- struct{}{}:
				default:
				}
				if r.gained != nil {
					r.gained()
				}
			case !held && was:
				r.held.Set(0)
				r.log.Warn("lease lost", "holder", st.Record.Holder, "epoch", st.Record.Epoch)
				mu.Lock()
				release()
				mu.Unlock()
			}
			was = held
			wait := every
			if err != nil {
				wait = retry
			}
			due = time.Now().Add(wait)
			t.Reset(wait)
		}
	})

	// The passes, while the lease is held: ebb's one loop shape.
	_ = loop.Run(ctx, loop.Options{Interval: r.interval, Next: r.next, Trigger: r.trigger, Logger: r.log},
		func(context.Context) error {
			mu.Lock()
			pctx := holdCtx
			mu.Unlock()
			if pctx == nil || pctx.Err() != nil {
				return nil // not held: gaining the lease triggers a pass
			}
			if !r.lease.Held() {
				// Held by the renewer's last word but lapsed by the
				// clock: the process was paused past its lease.
				st := r.lease.Status()
				r.log.Warn("refusing to run: the lease lapsed before it could be renewed", "epoch", st.Record.Epoch)
				return nil
			}
			return r.pass(pctx)
		})
}

// ReplicaStatus is one role's lease as this replica sees it.
type ReplicaStatus struct {
	Role string
	// Held: this replica holds the role now.
	Held bool
	// Holder, Epoch and Expires are the lease document as last read or
	// written; Holder is empty when no replica ever took it.
	Holder  string
	Epoch   int64
	Expires time.Time
}

// Cluster reports each background role's lease: who holds it, at which
// epoch, until when.
func (db *DB) Cluster() (replica string, roles []ReplicaStatus) {
	for _, name := range roleNames {
		r, ok := db.roles[name]
		if !ok {
			continue
		}
		st := r.lease.Status()
		roles = append(roles, ReplicaStatus{Role: r.name, Held: st.Held, Holder: st.Record.Holder, Epoch: st.Record.Epoch, Expires: st.Record.Expires})
	}
	return db.o.ReplicaID, roles
}

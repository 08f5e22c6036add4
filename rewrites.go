package ebb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/lease"
	"github.com/ebb-data/ebb/internal/loop"
	"github.com/ebb-data/ebb/internal/promreg"
	"github.com/ebb-data/ebb/internal/rewrite"
)

// rewriteInterval is how often the rewriter looks for jobs it was not
// woken for: those recorded through another replica, and those a lease
// change or a failed pass left unfinished. A look is one read per feature.
const rewriteInterval = time.Minute

// rewriter runs the TTL rewrites of list features and shared tables (see
// lists.FeatureConfig.Rewrite, multitable.Config.Rewrite): every job left
// unfinished, batch after batch, each batch fenced. It runs on the replica
// that holds the shard manager's lease, sharing it rather than keeping a
// lease of its own, so that an idle replica renews no more leases than
// before; its passes run in a loop of their own, so that a long rewrite
// never delays the manager's.
type rewriter struct {
	db *DB
	// wake receives when this process records a job, so that the role
	// runs it at once rather than at its next pass.
	wake chan struct{}
	rows *prometheus.CounterVec
	jobs *prometheus.CounterVec
}

func newRewriter(db *DB) (*rewriter, error) {
	w := &rewriter{
		db:   db,
		wake: make(chan struct{}, 1),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_ttl_rewrite_rows_total",
			Help: "Rows visited by TTL rewrites, by feature (list, table) and outcome: rewritten (a new expiry), removed (the new expiry had passed), skipped (left as they were).",
		}, []string{"feature", "outcome"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_ttl_rewrite_jobs_total",
			Help: "TTL rewrites that ended, by feature (list, table) and state: done, or superseded (the TTL changed again, or the feature was deleted, before it finished).",
		}, []string{"feature", "state"}),
	}
	if err := promreg.Register(db.o.Registerer, w.rows, w.jobs); err != nil {
		return nil, fmt.Errorf("ebb: register rewrite metrics: %w", err)
	}
	return w, nil
}

// started is the features' RewriteStarted hook.
func (w *rewriter) started() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run runs passes while the shard manager's lease l is held here: every
// rewriteInterval, and at once when this process records a job. It
// returns when ctx is done. While the lease is held elsewhere it looks at
// it (in memory) every half lease, so that jobs left by a replica that
// stopped resume soon after this one takes the lease over.
func (w *rewriter) run(ctx context.Context, l *lease.Lease) {
	next := func() time.Duration {
		if !l.Held() {
			return l.Duration() / 2
		}
		return rewriteInterval
	}
	_ = loop.Run(ctx, loop.Options{Interval: rewriteInterval, Next: next, Trigger: w.wake, Logger: w.db.o.Logger.With("role", "ttl-rewriter")},
		func(ctx context.Context) error {
			if !l.Held() {
				return nil // another replica runs the jobs
			}
			return w.pass(ctx, l.Fence)
		})
}

// pass runs every pending rewrite, lists first, under fence.
func (w *rewriter) pass(ctx context.Context, fence func(context.Context) error) error {
	errList := w.db.lists.RunRewrites(ctx, fence, w.saved("list"))
	errTable := w.db.tables.RunRewrites(ctx, fence, w.saved("table"))
	return errors.Join(errList, errTable)
}

// saved counts one saved batch and logs a job's end.
func (w *rewriter) saved(feature string) func(key string, before, after rewrite.Job) {
	return func(key string, before, after rewrite.Job) {
		w.rows.WithLabelValues(feature, "rewritten").Add(float64(after.Rewritten - before.Rewritten))
		w.rows.WithLabelValues(feature, "removed").Add(float64(after.Removed - before.Removed))
		w.rows.WithLabelValues(feature, "skipped").Add(float64(after.Skipped - before.Skipped))
		if !after.Active() {
			w.jobs.WithLabelValues(feature, after.State).Inc()
			w.db.o.Logger.Info("ttl rewrite ended", "feature", feature, "key", key, "state", after.State, "ttl", after.TTL,
				"scanned", after.Scanned, "rewritten", after.Rewritten, "removed", after.Removed, "skipped", after.Skipped)
		}
	}
}

package ebb

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/promreg"
	"github.com/ebb-data/ebb/internal/rewrite"
)

// rewriter runs the TTL rewrites of list features and shared tables (see
// lists.FeatureConfig.Rewrite, multitable.Config.Rewrite) as the pass of
// RoleRewriter: every job left unfinished, batch after batch, each batch
// fenced by the role's lease.
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

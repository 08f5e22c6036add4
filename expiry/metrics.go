package expiry

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are registered on the Registerer given in Options. Two decorators
// on one registry share the collectors (counts add up).
type metrics struct {
	deleted   prometheus.Counter
	lag       prometheus.Histogram
	wmLag     prometheus.Gauge
	indexed   prometheus.Counter
	reindexed prometheus.Counter
	dropped   *prometheus.CounterVec
	retries   prometheus.Counter
	sweeps    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_expiry_deleted_total",
			Help: "Expired rows the sweeper physically deleted (conditional deletes applied; a row extended after it was indexed survives its delete and is counted too).",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ebb_expiry_lag_seconds",
			Help:    "Time from a row's expiry to its physical delete.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300, 3600},
		}),
		wmLag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ebb_expiry_watermark_lag_seconds",
			Help: "Time from the start of the oldest window not yet completely swept to now; about one window when the sweeper keeps up.",
		}),
		indexed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_expiry_indexed_total",
			Help: "Expiry index entries written for rows carrying an expiry.",
		}),
		reindexed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_expiry_reindexed_total",
			Help: "Index entries rewritten because their write took longer than the grace period.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_expiry_dropped_entries_total",
			Help: "Index entries removed without a delete, by reason.",
		}, []string{"reason"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_expiry_retries_total",
			Help: "Backend calls the sweeper retried after throttling or unavailability.",
		}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_expiry_sweeps_total",
			Help: "Sweeper passes, by result.",
		}, []string{"result"}),
	}
	// Every reason and result is exported from the start, at zero, so
	// that rates and alerts see the first one.
	for _, reason := range []string{"malformed", "table_gone", "invalid_key"} {
		m.dropped.WithLabelValues(reason)
	}
	for _, result := range []string{"ok", "error"} {
		m.sweeps.WithLabelValues(result)
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.deleted = register(reg, m.deleted, &err)
	m.lag = register(reg, m.lag, &err)
	m.wmLag = register(reg, m.wmLag, &err)
	m.indexed = register(reg, m.indexed, &err)
	m.reindexed = register(reg, m.reindexed, &err)
	m.dropped = register(reg, m.dropped, &err)
	m.retries = register(reg, m.retries, &err)
	m.sweeps = register(reg, m.sweeps, &err)
	if err != nil {
		return nil, fmt.Errorf("expiry: register metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the identical collector already
// registered, so that two decorators can share one registry. The first
// error is kept in *errp and later calls do nothing.
func register[T prometheus.Collector](reg prometheus.Registerer, c T, errp *error) T {
	if *errp != nil {
		return c
	}
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing
		}
	}
	*errp = err
	return c
}

package cql

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store/remote"
)

// metrics are the Store's request metrics (remote.Metrics: requests by
// operation and outcome, latency by operation) and its retries by reason,
// so that an overloaded or unreachable cluster shows on /metrics before
// users notice. They live on the Store (no globals) and are registered on
// Options.Registerer when one is given.
type metrics struct {
	*remote.Metrics
	retries *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{retries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ebb_cql_retries_total",
		Help: "Requests sent again after the cluster refused or timed out, by reason.",
	}, []string{"reason"})}
	// The retried kinds are exported from the start, at zero, so that
	// rates and alerts see the first retry.
	for _, k := range []errKind{kindOverloaded, kindUnavailable, kindReadTimeout, kindWriteTimeout} {
		m.retries.WithLabelValues(k.String())
	}
	m.Metrics = remote.NewMetrics("cql",
		"Operations on the CQL backend (after retries) by operation and outcome.",
		"Duration of operations on the CQL backend, retries included.", m.retries)
	return m
}

// Collector returns the Store's metrics as one collector, for callers that
// register it themselves.
func (s *Store) Collector() prometheus.Collector { return s.metrics }

func (k errKind) String() string {
	switch k {
	case kindOverloaded:
		return "overloaded"
	case kindUnavailable:
		return "unavailable"
	case kindReadTimeout:
		return "read_timeout"
	case kindWriteTimeout:
		return "write_timeout"
	case kindCASUnknown:
		return "cas_unknown"
	case kindNotFound:
		return "not_found"
	case kindTooLarge:
		return "too_large"
	case kindInvalid:
		return "invalid"
	}
	return "error"
}

// timeNow times operations for the latency histogram: latency is real time,
// whatever clock the Store resolves expiry on.
var timeNow = time.Now

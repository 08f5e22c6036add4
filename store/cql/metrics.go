package cql

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics counts the Store's requests by operation and outcome and its
// retries by reason, so that an overloaded or unreachable cluster shows on
// /metrics before users notice. They live on the Store (no globals) and are
// registered on Options.Registerer when one is given.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	retries  *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_cql_requests_total",
			Help: "Operations on the CQL backend (after retries) by operation and outcome.",
		}, []string{"op", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ebb_cql_request_seconds",
			Help:    "Duration of operations on the CQL backend, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"op"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_cql_retries_total",
			Help: "Requests sent again after the cluster refused or timed out, by reason.",
		}, []string{"reason"}),
	}
}

// Collector returns the Store's metrics as one collector, for callers that
// register it themselves.
func (s *Store) Collector() prometheus.Collector { return s.metrics }

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.latency.Describe(ch)
	m.retries.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.latency.Collect(ch)
	m.retries.Collect(ch)
}

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

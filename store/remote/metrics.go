package remote

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the request metrics every remote backend exports:
// ebb_<system>_requests_total by operation and outcome and
// ebb_<system>_request_seconds by operation, so that an overloaded or
// unreachable service shows on /metrics before users notice. The outcome
// labels are the backend's. They live on the Store (no globals); Metrics
// is one prometheus.Collector with the backend's further metrics.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	extra    []prometheus.Collector
}

// NewMetrics returns the metrics of system ("cql", "dynamodb") with their
// help texts, collecting extra with them.
func NewMetrics(system, requestsHelp, latencyHelp string, extra ...prometheus.Collector) *Metrics {
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_" + system + "_requests_total",
			Help: requestsHelp,
		}, []string{"op", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ebb_" + system + "_request_seconds",
			Help:    latencyHelp,
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"op"}),
		extra: extra,
	}
}

// Observe counts one operation with its outcome and records how long it
// took (real time, whatever clock the Store resolves expiry on).
func (m *Metrics) Observe(op, outcome string, took time.Duration) {
	m.latency.WithLabelValues(op).Observe(took.Seconds())
	m.requests.WithLabelValues(op, outcome).Inc()
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.latency.Describe(ch)
	for _, c := range m.extra {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.latency.Collect(ch)
	for _, c := range m.extra {
		c.Collect(ch)
	}
}

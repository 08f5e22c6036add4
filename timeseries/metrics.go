package timeseries

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/promreg"
)

// metrics are the write-path counters, erases included. Series are labelled by index name
// only for indexes that exist, so a client cannot grow them at will.
type metrics struct {
	eventsWritten *prometheus.CounterVec
	writeRefused  *prometheus.CounterVec
	eventsErased  *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		eventsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_index_events_written_total",
			Help: "Events written to time-sharded indexes, by index.",
		}, []string{"index"}),
		writeRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_index_write_refused_total",
			Help: "Event batches refused, by index and reason (invalid, too_large, expired, no_shard, error).",
		}, []string{"index", "reason"}),
		eventsErased: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_index_events_erased_total",
			Help: "Events removed from time-sharded indexes by erase requests, by index.",
		}, []string{"index"}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	return promreg.Register(r, m.eventsWritten, m.writeRefused, m.eventsErased)
}

func (m *metrics) written(index string, n int) {
	if n > 0 {
		m.eventsWritten.WithLabelValues(index).Add(float64(n))
	}
}

func (m *metrics) erased(index string, n int64) {
	if n > 0 {
		m.eventsErased.WithLabelValues(index).Add(float64(n))
	}
}

func (m *metrics) refused(index, reason string) {
	m.writeRefused.WithLabelValues(index, reason).Inc()
}

// forget removes a deleted index's series.
func (m *metrics) forget(index string) {
	m.eventsWritten.DeleteLabelValues(index)
	m.eventsErased.DeleteLabelValues(index)
	m.writeRefused.DeletePartialMatch(prometheus.Labels{"index": index})
}

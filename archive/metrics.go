package archive

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/promreg"
)

type metrics struct {
	archived prometheus.Counter
	failures prometheus.Counter
	rows     prometheus.Counter
	bytes    prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		archived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_archive_shards_total",
			Help: "Shards archived and verified before their drop.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_archive_failures_total",
			Help: "Archives of a shard that failed or did not verify; each holds the shard's drop.",
		}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_archive_rows_written_total",
			Help: "Rows written to archive objects, as exports progress (an archive written again counts again).",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_archive_bytes_total",
			Help: "Bytes of archive objects verified.",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	return promreg.Register(r, m.archived, m.failures, m.rows, m.bytes)
}

// Metrics are the archiver's counters, for tests and embedders that do
// not gather a registry.
type Metrics struct {
	Archived, Failures, Rows, Bytes prometheus.Counter
}

// Metrics returns the archiver's counters.
func (a *Archiver) Metrics() Metrics {
	return Metrics{Archived: a.metrics.archived, Failures: a.metrics.failures, Rows: a.metrics.rows, Bytes: a.metrics.bytes}
}

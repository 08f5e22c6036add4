package migrate

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/promreg"
)

// metrics are the migration series, labelled by index name for indexes
// that migrate only.
type metrics struct {
	phase          *prometheus.GaugeVec
	shadowFailures *prometheus.CounterVec
	compared       *prometheus.CounterVec
	mismatches     *prometheus.CounterVec
	backfillRows   *prometheus.CounterVec
	backfillLag    *prometheus.GaugeVec
	legacyLive     *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_migration_phase",
			Help: "1 for the phase an index's migration from a legacy table is in, 0 for the others.",
		}, []string{"index", "phase"}),
		shadowFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_migration_shadow_failures_total",
			Help: "Shadow writes and reads of the shards that failed (the legacy table answered), by index and op (write, read).",
		}, []string{"index", "op"}),
		compared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_migration_reads_compared_total",
			Help: "Sampled shadow reads compared with the legacy table's answer, by index.",
		}, []string{"index"}),
		mismatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_migration_mismatches_total",
			Help: "Events a shadow read found different between the legacy table and the shards, by index and kind (missing: legacy only; extra: shards only; different: payloads differ).",
		}, []string{"index", "kind"}),
		backfillRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_migration_backfill_rows_total",
			Help: "Legacy rows the backfill scanned, by index and outcome (copied, expired, past_retention, no_shard).",
		}, []string{"index", "outcome"}),
		backfillLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_migration_backfill_lag_seconds",
			Help: "Estimated time for a running backfill to finish at its current rate; 0 when none runs.",
		}, []string{"index"}),
		legacyLive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_migration_legacy_live_rows",
			Help: "Legacy rows still live, estimated from the last backfill scan and the rows' TTLs.",
		}, []string{"index"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.phase, m.shadowFailures, m.compared, m.mismatches, m.backfillRows, m.backfillLag, m.legacyLive}
}

func (m *metrics) register(r prometheus.Registerer) error {
	return promreg.Register(r, m.collectors()...)
}

func (m *metrics) setPhase(index string, p Phase) {
	for _, q := range Phases {
		v := 0.0
		if q == p {
			v = 1
		}
		m.phase.WithLabelValues(index, string(q)).Set(v)
	}
}

func (m *metrics) forget(index string) {
	l := prometheus.Labels{"index": index}
	m.phase.DeletePartialMatch(l)
	m.shadowFailures.DeletePartialMatch(l)
	m.compared.DeletePartialMatch(l)
	m.mismatches.DeletePartialMatch(l)
	m.backfillRows.DeletePartialMatch(l)
	m.backfillLag.DeletePartialMatch(l)
	m.legacyLive.DeletePartialMatch(l)
}

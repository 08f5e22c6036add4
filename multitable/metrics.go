package multitable

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/promreg"
)

// metrics are a Registry's counters.
type metrics struct {
	ops       *prometheus.CounterVec
	repairs   *prometheus.CounterVec
	stale     prometheus.Counter
	retired   prometheus.Counter
	conflicts prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_multitable_operations_total",
			Help: "Completed shared-table item operations, by operation (put, patch, get, batch_get, delete, list).",
		}, []string{"op"}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_multitable_repairs_total",
			Help: "Listing rows repaired, by kind: bucket rows restored after a listing retired them while an entry landed (bucket), stale entries removed by listings (stale_entry).",
		}, []string{"kind"}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_multitable_stale_entries_total",
			Help: "Listing entries skipped because their item was gone or had moved (garbage of races, crashes or writes in flight).",
		}),
		retired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_multitable_buckets_retired_total",
			Help: "Empty time buckets removed from a table's bucket directory by listings.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_multitable_write_conflicts_total",
			Help: "Shared-table puts and deletes that lost the race for an item to another writer of the same key and started over.",
		}),
	}
	// Every label value is exported from the start, at zero, so that
	// rates and alerts see the first event.
	for _, op := range []string{"put", "patch", "get", "batch_get", "delete", "list"} {
		m.ops.WithLabelValues(op)
	}
	for _, kind := range []string{"bucket", "stale_entry"} {
		m.repairs.WithLabelValues(kind)
	}
	if err := promreg.Register(reg, m.ops, m.repairs, m.stale, m.retired, m.conflicts); err != nil {
		return nil, err
	}
	return m, nil
}

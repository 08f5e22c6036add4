package shardmgr

import (
	"sync"
	"time"
)

// runwaySeries tracks which indexes have runway series
// (ebb_shard_runway_seconds, ebb_shard_runway_end_timestamp_seconds,
// ebb_shard_table_bucket_seconds), so that the series of a deleted index can be removed: by
// ForgetSeries at once on the replica that deleted it, and by the next
// RunOnce on any replica whose manager had reported it.
type runwaySeries struct {
	mu      sync.Mutex
	indexes map[string]bool
}

// setRunway reports an index's runway: the end of its last shard, the
// time left until then, and the width of one shard.
func (m *Manager) setRunway(index string, end time.Time, left, tableBucket time.Duration) {
	m.series.mu.Lock()
	defer m.series.mu.Unlock()
	if m.series.indexes == nil {
		m.series.indexes = map[string]bool{}
	}
	m.series.indexes[index] = true
	m.metrics.runway.WithLabelValues(index).Set(left.Seconds())
	m.metrics.runwayEnd.WithLabelValues(index).Set(float64(end.UnixMilli()) / 1e3)
	m.metrics.tableBucket.WithLabelValues(index).Set(tableBucket.Seconds())
}

// ForgetSeries removes a deleted index's metric series. Call it once the
// index's config is gone (within Exclusive, so that no run in progress
// reports it again); a series reported by a run that listed the index
// before it was deleted goes at the next RunOnce. It is safe for
// concurrent use.
func (m *Manager) ForgetSeries(index string) {
	m.series.mu.Lock()
	defer m.series.mu.Unlock()
	m.deleteSeries(index)
}

// pruneSeries removes the series of every index not in listed: indexes
// deleted since they were reported, here or through another replica.
func (m *Manager) pruneSeries(listed []Config) {
	keep := make(map[string]bool, len(listed))
	for _, cfg := range listed {
		keep[cfg.Index] = true
	}
	m.series.mu.Lock()
	defer m.series.mu.Unlock()
	for index := range m.series.indexes {
		if !keep[index] {
			m.deleteSeries(index)
		}
	}
}

// deleteSeries removes an index's series; the caller holds m.series.mu.
func (m *Manager) deleteSeries(index string) {
	delete(m.series.indexes, index)
	m.metrics.runway.DeleteLabelValues(index)
	m.metrics.runwayEnd.DeleteLabelValues(index)
	m.metrics.tableBucket.DeleteLabelValues(index)
}

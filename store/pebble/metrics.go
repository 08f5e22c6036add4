package pebble

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector returns a Prometheus collector for the Pebble engine's metrics.
// Register it on the registry of the caller's choosing.
func (s *Store) Collector() prometheus.Collector { return &collector{s: s} }

type collector struct{ s *Store }

var (
	descDisk        = prometheus.NewDesc("ebb_pebble_disk_usage_bytes", "Disk space used by the embedded store.", nil, nil)
	descMemtable    = prometheus.NewDesc("ebb_pebble_memtable_bytes", "Size of the memtables.", nil, nil)
	descL0Files     = prometheus.NewDesc("ebb_pebble_l0_files", "Files in level 0 (a read-amplification signal).", nil, nil)
	descReadAmp     = prometheus.NewDesc("ebb_pebble_read_amplification", "Sublevels a point read may consult.", nil, nil)
	descCompactions = prometheus.NewDesc("ebb_pebble_compactions_total", "Compactions run.", nil, nil)
	descCompFailed  = prometheus.NewDesc("ebb_pebble_compactions_failed_total", "Compactions that failed (a corrupt block met again and again shows here).", nil, nil)
	descFlushes     = prometheus.NewDesc("ebb_pebble_flushes_total", "Memtable flushes run.", nil, nil)
	descCacheHits   = prometheus.NewDesc("ebb_pebble_block_cache_hits_total", "Block cache hits.", nil, nil)
	descCacheMisses = prometheus.NewDesc("ebb_pebble_block_cache_misses_total", "Block cache misses.", nil, nil)
	descWALBytes    = prometheus.NewDesc("ebb_pebble_wal_bytes_written_total", "Bytes written to the write-ahead log.", nil, nil)
	descTables      = prometheus.NewDesc("ebb_pebble_tables", "Tables in the catalog.", nil, nil)
	descFree        = prometheus.NewDesc("ebb_pebble_disk_free_bytes", "Bytes available to the embedded store on its data directory's file system.", nil, nil)
	descMinFree     = prometheus.NewDesc("ebb_pebble_min_free_bytes", "Free-space floor: below it, writes that add data are refused with 507 (0: no floor).", nil, nil)
	descRefused     = prometheus.NewDesc("ebb_pebble_writes_refused_total", "Writes the embedded store refused, by reason: insufficient_storage (below the free-space floor) or storage_fault (after a disk fault).", []string{"reason"}, nil)
	descFault       = prometheus.NewDesc("ebb_pebble_storage_fault", "1 while the embedded store is unhealthy: it refuses writes after a disk fault, or it found a corrupt block (reads touching it fail), else 0.", nil, nil)
	descStalls      = prometheus.NewDesc("ebb_pebble_write_stalls_total", "Times Pebble stopped writes, by reason: memtables (too many memtables queued for flushing) or l0 (too many files in level 0).", []string{"reason"}, nil)
	descStallTime   = prometheus.NewDesc("ebb_pebble_write_stall_seconds_total", "Time writes spent stopped by Pebble.", nil, nil)
	descDebt        = prometheus.NewDesc("ebb_pebble_compaction_debt_bytes", "Bytes Pebble estimates it must compact to bring the LSM back into shape.", nil, nil)
	descSublevels   = prometheus.NewDesc("ebb_pebble_l0_sublevels", "Sublevels of level 0: Pebble slows compactions' intake and, past its threshold, writes as they grow.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDisk, descMemtable, descL0Files, descReadAmp, descCompactions, descCompFailed, descFlushes, descCacheHits, descCacheMisses, descWALBytes, descTables, descFree, descMinFree, descRefused, descFault, descStalls, descStallTime, descDebt, descSublevels} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.RLock()
	closed, tables := c.s.closed, len(c.s.tables)
	var m *pebble.Metrics
	if !closed {
		// Under the lock: a recovery from a full disk replaces the
		// database (recover.go).
		m = c.s.db.Metrics()
	}
	c.s.mu.RUnlock()
	if closed {
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(descDisk, float64(m.DiskSpaceUsage()))
	gauge(descMemtable, float64(m.MemTable.Size))
	gauge(descL0Files, float64(m.Levels[0].TablesCount))
	gauge(descReadAmp, float64(m.ReadAmp()))
	counter(descCompactions, float64(m.Compact.Count))
	counter(descCompFailed, float64(m.Compact.FailedCount))
	counter(descFlushes, float64(m.Flush.Count))
	counter(descCacheHits, float64(m.BlockCache.Hits))
	counter(descCacheMisses, float64(m.BlockCache.Misses))
	counter(descWALBytes, float64(m.WAL.BytesWritten))
	gauge(descTables, float64(tables))
	if free := c.s.diskFree(); free >= 0 {
		gauge(descFree, float64(free))
	}
	gauge(descMinFree, float64(max(c.s.guard.minFree, 0)))
	ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(c.s.guard.refusedFull.Load()), "insufficient_storage")
	ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(c.s.guard.refusedFault.Load()), "storage_fault")
	fault := 0.0
	if c.s.Health() != nil {
		fault = 1
	}
	gauge(descFault, fault)
	st := c.s.stalls.snapshot()
	ch <- prometheus.MustNewConstMetric(descStalls, prometheus.CounterValue, float64(st.Memtables), stallMemtables)
	ch <- prometheus.MustNewConstMetric(descStalls, prometheus.CounterValue, float64(st.L0), stallL0)
	counter(descStallTime, st.Duration.Seconds())
	gauge(descDebt, float64(m.Compact.EstimatedDebt))
	gauge(descSublevels, float64(m.Levels[0].Sublevels))
}

// Reasons of a write stall, the reason label of
// ebb_pebble_write_stalls_total.
const (
	stallMemtables = "memtables"
	stallL0        = "l0"
)

// WriteStalls counts the times Pebble stopped writes and how long they
// stayed stopped.
type WriteStalls struct {
	// Memtables counts stalls because the memtables queued for flushing
	// reached Pebble's MemTableStopWritesThreshold; L0 those because
	// level 0 reached its L0StopWritesThreshold.
	Memtables, L0 int64
	// Duration is the time writes were stopped, stalls in progress
	// included.
	Duration time.Duration
}

// WriteStalls reports the write stalls since the store was opened.
func (s *Store) WriteStalls() WriteStalls { return s.stalls.snapshot() }

// stallTracker follows Pebble's write-stall events. Pebble reports at most
// one stall at a time.
type stallTracker struct {
	mu    sync.Mutex
	n     WriteStalls
	began time.Time // zero when no stall is in progress
}

func (t *stallTracker) begin(info pebble.WriteStallBeginInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Pebble's reasons are "memtable count limit reached" and "L0 file
	// count limit exceeded".
	if len(info.Reason) > 0 && (info.Reason[0] == 'L' || info.Reason[0] == 'l') {
		t.n.L0++
	} else {
		t.n.Memtables++
	}
	// A stall's duration is measured time, not logic: the wall clock.
	t.began = time.Now()
}

func (t *stallTracker) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.began.IsZero() {
		t.n.Duration += time.Since(t.began)
		t.began = time.Time{}
	}
}

func (t *stallTracker) snapshot() WriteStalls {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.n
	if !t.began.IsZero() {
		n.Duration += time.Since(t.began)
	}
	return n
}

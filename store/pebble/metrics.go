package pebble

import (
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
	descFlushes     = prometheus.NewDesc("ebb_pebble_flushes_total", "Memtable flushes run.", nil, nil)
	descCacheHits   = prometheus.NewDesc("ebb_pebble_block_cache_hits_total", "Block cache hits.", nil, nil)
	descCacheMisses = prometheus.NewDesc("ebb_pebble_block_cache_misses_total", "Block cache misses.", nil, nil)
	descWALBytes    = prometheus.NewDesc("ebb_pebble_wal_bytes_written_total", "Bytes written to the write-ahead log.", nil, nil)
	descTables      = prometheus.NewDesc("ebb_pebble_tables", "Tables in the catalog.", nil, nil)
	descFree        = prometheus.NewDesc("ebb_pebble_disk_free_bytes", "Bytes available to the embedded store on its data directory's file system.", nil, nil)
	descMinFree     = prometheus.NewDesc("ebb_pebble_min_free_bytes", "Free-space floor: below it, writes that add data are refused with 507 (0: no floor).", nil, nil)
	descRefused     = prometheus.NewDesc("ebb_pebble_writes_refused_total", "Writes the embedded store refused, by reason: insufficient_storage (below the free-space floor) or storage_fault (after a disk fault).", []string{"reason"}, nil)
	descFault       = prometheus.NewDesc("ebb_pebble_storage_fault", "1 while the embedded store refuses writes after a disk fault, else 0.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDisk, descMemtable, descL0Files, descReadAmp, descCompactions, descFlushes, descCacheHits, descCacheMisses, descWALBytes, descTables, descFree, descMinFree, descRefused, descFault} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.RLock()
	closed, tables := c.s.closed, len(c.s.tables)
	c.s.mu.RUnlock()
	if closed {
		return
	}
	m := c.s.db.Metrics()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(descDisk, float64(m.DiskSpaceUsage()))
	gauge(descMemtable, float64(m.MemTable.Size))
	gauge(descL0Files, float64(m.Levels[0].TablesCount))
	gauge(descReadAmp, float64(m.ReadAmp()))
	counter(descCompactions, float64(m.Compact.Count))
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
}

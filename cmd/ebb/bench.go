package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

func init() { commands = append(commands, newBenchCmd) }

// benchConfig is `ebb bench`'s flags.
type benchConfig struct {
	events     int
	batch      int
	payload    int
	ids        int
	queries    int
	limit      int
	expireRows []int
	expireOnly bool
	dir        string
	sync       bool
	asJSON     bool
	runs       int
}

// benchResult is one measured phase.
type benchResult struct {
	Phase     string  `json:"phase"`
	Ops       int     `json:"ops"`
	Unit      string  `json:"unit"`
	Seconds   float64 `json:"seconds"`
	NsPerOp   float64 `json:"ns_per_op"`
	PerSecond float64 `json:"per_second"`
	P50Ns     float64 `json:"p50_ns,omitempty"`
	P99Ns     float64 `json:"p99_ns,omitempty"`
	// MinPerSecond and MaxPerSecond are the spread over the runs; the
	// other figures are the median run's.
	MinPerSecond float64 `json:"min_per_second"`
	MaxPerSecond float64 `json:"max_per_second"`
}

type benchReport struct {
	Backend string `json:"backend"`
	Synced  bool   `json:"synced"`
	// Runs is how many times every phase ran, each time on a fresh store.
	Runs    int           `json:"runs"`
	Results []benchResult `json:"results"`
	// DropSpeedup is how many times cheaper dropping a shard was than
	// deleting its rows one by one (what a per-row TTL costs): the median
	// over the runs, with the lowest and highest, at the first of
	// --expire-rows.
	DropSpeedup    float64 `json:"drop_speedup"`
	DropSpeedupMin float64 `json:"drop_speedup_min"`
	DropSpeedupMax float64 `json:"drop_speedup_max"`
	// Expiry is how expiring a shard grows with its rows: one entry per
	// --expire-rows.
	Expiry []expireGrowth `json:"expiry"`
}

// expireGrowth is the expiry of shards of one size, three ways: dropping
// the shard, deleting its rows one per write (what a per-row TTL costs),
// and deleting them a thousand per write (as the expiry sweeper batches).
// Times are the median run's; each speedup is the median over the runs of
// the run's own ratio, with the lowest and highest.
type expireGrowth struct {
	Rows            int     `json:"rows"`
	DropSeconds     float64 `json:"drop_seconds"`
	DeleteSeconds   float64 `json:"delete_seconds"`
	BatchSeconds    float64 `json:"batch_delete_seconds"`
	Speedup         float64 `json:"drop_speedup"`
	SpeedupMin      float64 `json:"drop_speedup_min"`
	SpeedupMax      float64 `json:"drop_speedup_max"`
	BatchSpeedup    float64 `json:"drop_speedup_over_batches"`
	BatchSpeedupMin float64 `json:"drop_speedup_over_batches_min"`
	BatchSpeedupMax float64 `json:"drop_speedup_over_batches_max"`
	expireDisk
}

// expireDisk is what the sstables of the store took on disk (du: allocated
// blocks) around each way of expiring, in the median run (by drop time).
type expireDisk struct {
	// Before is with all three shards written and flushed; Shard is
	// Pebble's estimate of what the dropped shard's rows took of it.
	Before int64 `json:"sst_bytes_before"`
	Shard  int64 `json:"shard_sst_bytes"`
	// AfterDrop is once the dropped shard's files were gone, which took
	// FreeSeconds from the start of the drop.
	AfterDrop   int64   `json:"sst_bytes_after_drop"`
	FreeSeconds float64 `json:"drop_free_seconds"`
	// AfterDeletes is once both other shards' rows were deleted and the
	// deletions flushed: deleting a row writes a tombstone, so the disk
	// grows first.
	AfterDeletes int64 `json:"sst_bytes_after_deletes"`
	// AfterCompaction is once a full compaction, which took
	// CompactSeconds, removed the deleted rows and their tombstones.
	AfterCompaction int64   `json:"sst_bytes_after_compaction"`
	CompactSeconds  float64 `json:"compact_seconds"`
}

func newBenchCmd(*client) *cobra.Command {
	var cfg benchConfig
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure ingest, query and expiry on the embedded backend",
		Long: `Measure the time-sharded index on the embedded Pebble backend, in a
temporary directory (or --dir): ingest events in batches, query pages of
events, and expire a shard by dropping it against deleting the same rows one
by one (what a per-row TTL costs). Every phase runs --runs times, each time
on a fresh store; the table shows the median run and the spread. Prints a
table, or JSON with --json. No server is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.events, "events", 100_000, "events to ingest")
	f.IntVar(&cfg.batch, "batch", 1000, "events per write (1..10000)")
	f.IntVar(&cfg.payload, "payload", 100, "payload bytes per event")
	f.IntVar(&cfg.ids, "index-ids", 100, "distinct index ids the events are spread over")
	f.IntVar(&cfg.queries, "queries", 1000, "queries to run")
	f.IntVar(&cfg.limit, "limit", 100, "events per query (1..10000)")
	f.IntSliceVar(&cfg.expireRows, "expire-rows", []int{100_000}, "rows in the shard expired by drop and by row deletes; a list (100000,1000000) measures each size")
	f.BoolVar(&cfg.expireOnly, "expire-only", false, "measure only expiry, skipping ingest and query")
	f.StringVar(&cfg.dir, "dir", "", "directory for the store (default: a temporary one, removed afterwards)")
	f.BoolVar(&cfg.sync, "sync", false, "sync every write to disk (the server's default); without it the figures show CPU cost rather than fsync latency")
	f.BoolVar(&cfg.asJSON, "json", false, "print the results as JSON")
	f.IntVar(&cfg.runs, "runs", 3, "times to run every phase, each on a fresh store (the median is reported)")
	return cmd
}

func (c benchConfig) validate() error {
	switch {
	case c.events < 1, c.queries < 1, c.ids < 1, c.payload < 0, c.runs < 1:
		return errors.New("--events, --queries, --expire-rows, --index-ids and --runs must be positive, --payload not negative")
	case len(c.expireRows) < 1 || len(c.expireRows) > maxExpireSizes:
		return fmt.Errorf("--expire-rows: want 1 to %d sizes", maxExpireSizes)
	case slices.Min(c.expireRows) < 1:
		return errors.New("--events, --queries, --expire-rows, --index-ids and --runs must be positive, --payload not negative")
	case c.batch < 1 || c.batch > timeseries.MaxBatch:
		return fmt.Errorf("--batch %d: want 1..%d", c.batch, timeseries.MaxBatch)
	case c.limit < 1 || c.limit > store.MaxLimit:
		return fmt.Errorf("--limit %d: want 1..%d", c.limit, store.MaxLimit)
	}
	return nil
}

// The bench index: daily shards, hourly partitions, 30 days' retention.
var benchIndex = timeseries.Config{Name: "bench", TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 30 * 24 * time.Hour, Runway: 2}

func runBench(ctx context.Context, cfg benchConfig, stdout, stderr io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	dir := cfg.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ebb-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	bar := newProgress(stderr)
	defer bar.done() // on an error too, so that no half-drawn bar is left
	rep := benchReport{Backend: "pebble", Synced: cfg.sync, Runs: cfg.runs}
	var runs []benchRun
	for i := range cfg.runs {
		r, err := benchOnce(ctx, cfg, filepath.Join(dir, fmt.Sprintf("run-%d", i+1)), bar, i+1)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	bar.done()
	// Each phase's median run, and the spread.
	for p := range runs[0].results {
		byTime := make([]benchResult, len(runs))
		for i, r := range runs {
			byTime[i] = r.results[p]
		}
		slices.SortFunc(byTime, func(a, b benchResult) int { return cmp.Compare(a.Seconds, b.Seconds) })
		med := byTime[len(byTime)/2]
		med.MinPerSecond, med.MaxPerSecond = byTime[len(byTime)-1].PerSecond, byTime[0].PerSecond
		rep.Results = append(rep.Results, med)
	}
	for k, rows := range cfg.expireRows {
		g := expireGrowth{Rows: rows}
		byDrop := make([]expireRun, len(runs))
		speedups, batchSpeedups := make([]float64, len(runs)), make([]float64, len(runs))
		for i, r := range runs {
			e := r.expiry[k]
			byDrop[i] = e
			speedups[i] = e.del.Seconds() / max(e.drop.Seconds(), 1e-9)
			batchSpeedups[i] = e.batch.Seconds() / max(e.drop.Seconds(), 1e-9)
		}
		slices.SortFunc(byDrop, func(a, b expireRun) int { return cmp.Compare(a.drop, b.drop) })
		med := byDrop[len(byDrop)/2]
		g.DropSeconds, g.expireDisk = med.drop.Seconds(), med.disk
		dels, batches := make([]float64, len(runs)), make([]float64, len(runs))
		for i, r := range runs {
			dels[i], batches[i] = r.expiry[k].del.Seconds(), r.expiry[k].batch.Seconds()
		}
		g.DeleteSeconds, g.BatchSeconds = medianOf(dels), medianOf(batches)
		g.Speedup, g.SpeedupMin, g.SpeedupMax = medianOf(speedups), slices.Min(speedups), slices.Max(speedups)
		g.BatchSpeedup, g.BatchSpeedupMin, g.BatchSpeedupMax = medianOf(batchSpeedups), slices.Min(batchSpeedups), slices.Max(batchSpeedups)
		rep.Expiry = append(rep.Expiry, g)
	}
	rep.DropSpeedup, rep.DropSpeedupMin, rep.DropSpeedupMax = rep.Expiry[0].Speedup, rep.Expiry[0].SpeedupMin, rep.Expiry[0].SpeedupMax
	if cfg.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printBench(stdout, rep)
	return nil
}

// medianOf is the median of v, the upper one of an even count, as the
// phases' median run is.
func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// benchRun is one run of every phase.
type benchRun struct {
	results []benchResult
	expiry  []expireRun // by --expire-rows
}

// expireRun is one run's expiry of shards of one size.
type expireRun struct {
	drop, del, batch time.Duration
	disk             expireDisk
}

// freeWait bounds the wait for Pebble to delete obsolete files.
const freeWait = 2 * time.Second

// maxExpireSizes bounds --expire-rows: each size takes three days of the
// bench index's 30-day retention.
const maxExpireSizes = 8

// benchOnce runs every phase once on a fresh store in dir.
func benchOnce(ctx context.Context, cfg benchConfig, dir string, bar *progress, run int) (benchRun, error) {
	var out benchRun
	phase := func(name string) string {
		if cfg.runs == 1 {
			return name
		}
		return fmt.Sprintf("run %d/%d: %s", run, cfg.runs, name)
	}
	st, err := ebbpebble.Open(dir, ebbpebble.Options{NoSync: !cfg.sync})
	if err != nil {
		return out, err
	}
	defer st.Close()
	svc, err := timeseries.New(ctx, st, timeseries.Options{})
	if err != nil {
		return out, err
	}
	if _, _, err := svc.Create(ctx, benchIndex); err != nil {
		return out, err
	}
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	// Payloads are slices of one buffer of random letters, each starting
	// elsewhere: rows that compress as real payloads do, not to nothing.
	payloads := make([]byte, 1<<16+cfg.payload)
	for i := range payloads {
		payloads[i] = byte('a' + rng.IntN(26))
	}
	payload := func(i int) []byte { o := i * 7919 % (1 << 16); return payloads[o : o+cfg.payload : o+cfg.payload] }
	if !cfg.expireOnly {
		// Ingest: events over the last 20 hours, in batches.
		batch := make([]timeseries.Event, 0, cfg.batch)
		start := time.Now()
		for i := 0; i < cfg.events; i += len(batch) {
			batch = batch[:0]
			for j := i; j < min(i+cfg.batch, cfg.events); j++ {
				batch = append(batch, timeseries.Event{
					IndexID:   fmt.Sprintf("id-%d", j%cfg.ids),
					EventID:   fmt.Sprintf("event-%09d", j),
					Timestamp: now.Add(-time.Duration(rng.Int64N(int64(20 * time.Hour)))),
					Payload:   payload(j),
				})
			}
			if _, err := svc.WriteEvents(ctx, benchIndex.Name, batch); err != nil {
				return out, fmt.Errorf("ingest: %w", err)
			}
			bar.update(phase("ingest"), i+len(batch), cfg.events)
		}
		out.results = append(out.results, result("ingest", cfg.events, "events", time.Since(start), nil))

		// Query: pages of the newest events of random index ids.
		lat := make([]time.Duration, 0, cfg.queries)
		start = time.Now()
		for i := range cfg.queries {
			t0 := time.Now()
			_, err := svc.Query(ctx, benchIndex.Name, timeseries.Query{
				IndexID: fmt.Sprintf("id-%d", rng.IntN(cfg.ids)), From: now.Add(-24 * time.Hour), To: now.Add(time.Hour), Desc: true, Limit: cfg.limit,
			})
			if err != nil {
				return out, fmt.Errorf("query: %w", err)
			}
			lat = append(lat, time.Since(t0))
			bar.update(phase("query"), i+1, cfg.queries)
		}
		out.results = append(out.results, result("query", cfg.queries, "queries", time.Since(start), lat))
	}

	for k, rows := range cfg.expireRows {
		name := "expire"
		if len(cfg.expireRows) > 1 {
			name = fmt.Sprintf("expire %d rows", rows)
		}
		// Three past days per size: one shard to drop, one whose rows are
		// deleted one per write, one whose rows are deleted in batches.
		day := func(j int) time.Time { return now.Add(-time.Duration(3+3*k+j) * 24 * time.Hour) }
		e, err := expireOnce(ctx, st, svc, cfg, rows, day, dir, payload, bar, func(p string) string { return phase(name + ": " + p) })
		if err != nil {
			return out, err
		}
		out.expiry = append(out.expiry, e)
		out.results = append(out.results,
			result(name+": drop shard", rows, "rows", e.drop, nil),
			result(name+": row deletes", rows, "rows", e.del, nil),
			result(name+": row deletes, 1000 per write", rows, "rows", e.batch, nil))
	}
	return out, nil
}

// expireOnce fills three shards of the bench index with rows rows each,
// flushes them, then drops the first, deletes the second's rows one per
// write and the third's a thousand per write, and compacts, measuring
// each and the sstables' size on disk around them.
func expireOnce(ctx context.Context, st *ebbpebble.Store, svc *timeseries.Service, cfg benchConfig, rows int, day func(int) time.Time, dir string, payload func(int) []byte, bar *progress, phase func(string) string) (expireRun, error) {
	var out expireRun
	var shards [3]filledShard
	for j := range shards {
		var err error
		if shards[j], err = fillShard(ctx, svc, day(j), rows, cfg.ids, payload, bar, phase); err != nil {
			return out, err
		}
		// A shard expires weeks after its rows were written, long after
		// they left the memtable for sstables of their own day.
		if err := st.DB().Flush(); err != nil {
			return out, err
		}
	}
	var err error
	if out.disk.Before, err = sstBytes(dir); err != nil {
		return out, err
	}
	shardBytes, err := st.DiskUsage(shards[0].table)
	if err != nil {
		return out, err
	}
	out.disk.Shard = int64(shardBytes)
	start := time.Now()
	if err := st.DropTable(ctx, shards[0].table); err != nil {
		return out, fmt.Errorf("expire by drop: %w", err)
	}
	out.drop = time.Since(start)
	// Pebble deletes the files a drop leaves obsolete in the background:
	// wait until nine tenths of the shard's bytes are gone, or freeWait.
	// (A tiny shard may share an sstable with other tables' rows; that
	// file is freed by a later compaction, not by the drop.)
	want := out.disk.Before - out.disk.Shard*9/10
	for {
		if out.disk.AfterDrop, err = sstBytes(dir); err != nil {
			return out, err
		}
		if out.disk.AfterDrop <= want || time.Since(start) > freeWait {
			break
		}
		time.Sleep(time.Millisecond) // polling the disk, not logic
	}
	out.disk.FreeSeconds = time.Since(start).Seconds()

	start = time.Now()
	for i, e := range shards[1].events {
		m := deleteOf(e)
		if err := st.Write(ctx, shards[1].table, []store.Mutation{m}); err != nil {
			return out, fmt.Errorf("expire by row deletes: %w", err)
		}
		bar.update(phase("row deletes"), i+1, rows)
	}
	out.del = time.Since(start)

	start = time.Now()
	batch := make([]store.Mutation, 0, 1000)
	for i, e := range shards[2].events {
		batch = append(batch, deleteOf(e))
		if len(batch) == cap(batch) || i == rows-1 {
			if err := st.Write(ctx, shards[2].table, batch); err != nil {
				return out, fmt.Errorf("expire by batched row deletes: %w", err)
			}
			batch = batch[:0]
			bar.update(phase("row deletes, 1000 per write"), i+1, rows)
		}
	}
	out.batch = time.Since(start)

	if err := st.DB().Flush(); err != nil {
		return out, err
	}
	if out.disk.AfterDeletes, err = sstBytes(dir); err != nil {
		return out, err
	}
	start = time.Now()
	if err := st.DB().Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
		return out, fmt.Errorf("compact: %w", err)
	}
	out.disk.CompactSeconds = time.Since(start).Seconds()
	// The compaction's inputs are deleted in the background too: wait
	// until the size holds still for 100 ms, or freeWait.
	for last := int64(-1); time.Since(start) < freeWait; last = out.disk.AfterCompaction {
		if out.disk.AfterCompaction, err = sstBytes(dir); err != nil {
			return out, err
		}
		if out.disk.AfterCompaction == last {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling the disk, not logic
	}
	return out, nil
}

// deleteOf is the deletion of an event's row.
func deleteOf(e timeseries.Event) store.Mutation {
	return store.Mutation{Kind: store.DeleteRow, Partition: []any{e.IndexID, e.Timestamp.UnixMilli() / benchIndex.PartitionBucket.Milliseconds()},
		Clustering: []any{e.Timestamp, e.EventID}}
}

// sstBytes is the disk space (allocated blocks, as du counts) of the
// store's sstables: its data, without the write-ahead logs it preallocates
// and recycles.
func sstBytes(dir string) (int64, error) {
	var total int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted since listed
		}
		if err != nil {
			return 0, err
		}
		total += allocatedBytes(info)
	}
	return total, nil
}

type filledShard struct {
	table  string
	events []timeseries.Event
}

// fillShard writes rows events into the shard holding day.
func fillShard(ctx context.Context, svc *timeseries.Service, day time.Time, rows, ids int, payload func(int) []byte, bar *progress, phase func(string) string) (filledShard, error) {
	startOfDay := shardmgr.BucketStart(day, benchIndex.TableBucket)
	out := filledShard{table: shardmgr.ShardName(benchIndex.Name, startOfDay)}
	step := benchIndex.TableBucket / time.Duration(rows+1)
	out.events = make([]timeseries.Event, 0, rows)
	for i := range rows {
		out.events = append(out.events, timeseries.Event{
			IndexID:   fmt.Sprintf("id-%d", i%ids),
			EventID:   fmt.Sprintf("old-%09d", i),
			Timestamp: startOfDay.Add(time.Duration(i+1) * step).Truncate(time.Millisecond),
			Payload:   payload(i),
		})
	}
	for i := 0; i < len(out.events); i += timeseries.MaxBatch {
		if _, err := svc.WriteEvents(ctx, benchIndex.Name, out.events[i:min(i+timeseries.MaxBatch, len(out.events))]); err != nil {
			return out, fmt.Errorf("fill %s: %w", out.table, err)
		}
		bar.update(phase("fill "+out.table), min(i+timeseries.MaxBatch, len(out.events)), len(out.events))
	}
	return out, nil
}

func result(phase string, ops int, unit string, d time.Duration, lat []time.Duration) benchResult {
	r := benchResult{Phase: phase, Ops: ops, Unit: unit, Seconds: d.Seconds(),
		NsPerOp: float64(d.Nanoseconds()) / float64(ops), PerSecond: float64(ops) / max(d.Seconds(), 1e-9)}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.P50Ns = float64(lat[len(lat)/2].Nanoseconds())
		r.P99Ns = float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds())
	}
	return r
}

func printBench(w io.Writer, rep benchReport) {
	sync := "without sync"
	if rep.Synced {
		sync = "every write synced"
	}
	fmt.Fprintf(w, "ebb bench: backend %s, %s; the median of %d runs, each on a fresh store\n\n", rep.Backend, sync, rep.Runs)
	tw := newTable(w)
	fmt.Fprintln(tw, "PHASE\tOPS\tTOTAL\tPER OP\tPER SECOND\tSPREAD (PER SECOND)\tP50\tP99")
	for _, r := range rep.Results {
		p50, p99 := "-", "-"
		if r.P50Ns > 0 {
			p50, p99 = fmtNs(r.P50Ns), fmtNs(r.P99Ns)
		}
		fmt.Fprintf(tw, "%s\t%d %s\t%s\t%s\t%.0f\t%.0f-%.0f\t%s\t%s\n", r.Phase, r.Ops, r.Unit,
			time.Duration(r.Seconds*float64(time.Second)).Round(time.Microsecond), fmtNs(r.NsPerOp), r.PerSecond, r.MinPerSecond, r.MaxPerSecond, p50, p99)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nDropping a shard expired its rows %.0fx faster than deleting them one by one (runs: %.0fx to %.0fx).\n",
		rep.DropSpeedup, rep.DropSpeedupMin, rep.DropSpeedupMax)
	fmt.Fprintf(w, "\nExpiry by shard size (median run; speedups: median, lowest and highest run; sstables on disk):\n\n")
	tw = newTable(w)
	fmt.Fprintln(tw, "ROWS\tDROP\tROW DELETES\tDROP FASTER BY\t1000 PER WRITE\tDROP FASTER BY\tSST BEFORE\tSHARD\tAFTER DROP\tFREED IN\tAFTER DELETES\tCOMPACTION\tAFTER COMPACTION")
	for _, g := range rep.Expiry {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.0fx (%.0fx-%.0fx)\t%s\t%.0fx (%.0fx-%.0fx)\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Rows,
			fmtSeconds(g.DropSeconds), fmtSeconds(g.DeleteSeconds), g.Speedup, g.SpeedupMin, g.SpeedupMax,
			fmtSeconds(g.BatchSeconds), g.BatchSpeedup, g.BatchSpeedupMin, g.BatchSpeedupMax,
			fmtMB(g.Before), fmtMB(g.Shard), fmtMB(g.AfterDrop), fmtSeconds(g.FreeSeconds), fmtMB(g.AfterDeletes),
			fmtSeconds(g.CompactSeconds), fmtMB(g.AfterCompaction))
	}
	tw.Flush()
}

func fmtSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}

func fmtMB(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func fmtNs(ns float64) string {
	return time.Duration(ns).Round(10 * time.Nanosecond).String()
}

// progress reports the bench's phases on stderr: a progress bar redrawn in
// place on a terminal, and a plain line at each quarter of a phase
// otherwise, so that a log or a pipe gets readable lines, not control
// characters.
type progress struct {
	w       io.Writer
	tty     bool
	bar     *progressbar.ProgressBar
	phase   string
	start   time.Time
	quarter int // the last quarter reported in plain lines
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return newProgressFor(w, ok && term.IsTerminal(int(f.Fd())))
}

func newProgressFor(w io.Writer, tty bool) *progress { return &progress{w: w, tty: tty} }

// update reports done of total in phase; a new phase ends the previous one.
func (p *progress) update(phase string, done, total int) {
	if phase != p.phase {
		p.done()
		p.phase, p.start, p.quarter = phase, time.Now(), 0
		if p.tty {
			p.bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(fmt.Sprintf("%-36s", phase)),
				progressbar.OptionSetWidth(30),
				progressbar.OptionShowCount(),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
		}
	}
	if p.tty {
		_ = p.bar.Set(done)
		return
	}
	if q := done * 4 / max(total, 1); q > p.quarter {
		p.quarter = q
		fmt.Fprintf(p.w, "bench: %s: %d/%d (%d%%)", phase, done, total, q*25)
		if done >= total {
			fmt.Fprintf(p.w, " in %s", time.Since(p.start).Round(time.Millisecond))
		}
		fmt.Fprintln(p.w)
	}
}

// done ends the current phase, clearing its bar from the terminal. It is
// safe to call more than once.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Clear()
		p.bar = nil
	}
	p.phase = ""
}

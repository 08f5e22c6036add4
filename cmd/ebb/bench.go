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
	expireRows int
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
	// over the runs, with the lowest and highest.
	DropSpeedup    float64 `json:"drop_speedup"`
	DropSpeedupMin float64 `json:"drop_speedup_min"`
	DropSpeedupMax float64 `json:"drop_speedup_max"`
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
	f.IntVar(&cfg.expireRows, "expire-rows", 100_000, "rows in the shard expired by drop and by row deletes")
	f.StringVar(&cfg.dir, "dir", "", "directory for the store (default: a temporary one, removed afterwards)")
	f.BoolVar(&cfg.sync, "sync", false, "sync every write to disk (the server's default); without it the figures show CPU cost rather than fsync latency")
	f.BoolVar(&cfg.asJSON, "json", false, "print the results as JSON")
	f.IntVar(&cfg.runs, "runs", 3, "times to run every phase, each on a fresh store (the median is reported)")
	return cmd
}

func (c benchConfig) validate() error {
	switch {
	case c.events < 1, c.queries < 1, c.expireRows < 1, c.ids < 1, c.payload < 0, c.runs < 1:
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
	speedups := make([]float64, len(runs))
	for i, r := range runs {
		speedups[i] = r.dropSpeedup
	}
	slices.Sort(speedups)
	rep.DropSpeedup, rep.DropSpeedupMin, rep.DropSpeedupMax = speedups[len(speedups)/2], speedups[0], speedups[len(speedups)-1]
	if cfg.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printBench(stdout, rep)
	return nil
}

// benchRun is one run of every phase.
type benchRun struct {
	results     []benchResult
	dropSpeedup float64
}

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
	// Ingest: events over the last 20 hours, in batches.
	now := time.Now()
	payload := []byte(strings.Repeat("x", cfg.payload))
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]timeseries.Event, 0, cfg.batch)
	start := time.Now()
	for i := 0; i < cfg.events; i += len(batch) {
		batch = batch[:0]
		for j := i; j < min(i+cfg.batch, cfg.events); j++ {
			batch = append(batch, timeseries.Event{
				IndexID:   fmt.Sprintf("id-%d", j%cfg.ids),
				EventID:   fmt.Sprintf("event-%09d", j),
				Timestamp: now.Add(-time.Duration(rng.Int64N(int64(20 * time.Hour)))),
				Payload:   payload,
			})
		}
		if _, err := svc.Put(ctx, benchIndex.Name, batch); err != nil {
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

	// Expire: fill two past shards with the same rows; drop one, delete the
	// other's rows one by one.
	drop, err := fillShard(ctx, svc, now.Add(-10*24*time.Hour), cfg, payload, bar, phase)
	if err != nil {
		return out, err
	}
	del, err := fillShard(ctx, svc, now.Add(-11*24*time.Hour), cfg, payload, bar, phase)
	if err != nil {
		return out, err
	}
	// A shard expires weeks after its rows were written, long after they
	// left the memtable for sstables.
	if err := st.DB().Flush(); err != nil {
		return out, err
	}
	start = time.Now()
	if err := st.DropTable(ctx, drop.table); err != nil {
		return out, fmt.Errorf("expire by drop: %w", err)
	}
	dropTime := time.Since(start)
	out.results = append(out.results, result("expire: drop shard", cfg.expireRows, "rows", dropTime, nil))
	start = time.Now()
	for i, e := range del.events {
		m := store.Mutation{Kind: store.DeleteRow, Partition: []any{e.IndexID, e.Timestamp.UnixMilli() / benchIndex.PartitionBucket.Milliseconds()},
			Clustering: []any{e.Timestamp, e.EventID}}
		if err := st.Write(ctx, del.table, []store.Mutation{m}); err != nil {
			return out, fmt.Errorf("expire by row deletes: %w", err)
		}
		bar.update(phase("expire: row deletes"), i+1, len(del.events))
	}
	delTime := time.Since(start)
	out.results = append(out.results, result("expire: row deletes", cfg.expireRows, "rows", delTime, nil))
	out.dropSpeedup = delTime.Seconds() / max(dropTime.Seconds(), 1e-9)
	return out, nil
}

type filledShard struct {
	table  string
	events []timeseries.Event
}

// fillShard writes cfg.expireRows events into the shard holding day.
func fillShard(ctx context.Context, svc *timeseries.Service, day time.Time, cfg benchConfig, payload []byte, bar *progress, phase func(string) string) (filledShard, error) {
	startOfDay := shardmgr.BucketStart(day, benchIndex.TableBucket)
	out := filledShard{table: shardmgr.ShardName(benchIndex.Name, startOfDay)}
	step := benchIndex.TableBucket / time.Duration(cfg.expireRows+1)
	for i := range cfg.expireRows {
		out.events = append(out.events, timeseries.Event{
			IndexID:   fmt.Sprintf("id-%d", i%cfg.ids),
			EventID:   fmt.Sprintf("old-%09d", i),
			Timestamp: startOfDay.Add(time.Duration(i+1) * step).Truncate(time.Millisecond),
			Payload:   payload,
		})
	}
	for i := 0; i < len(out.events); i += timeseries.MaxBatch {
		if _, err := svc.Put(ctx, benchIndex.Name, out.events[i:min(i+timeseries.MaxBatch, len(out.events))]); err != nil {
			return out, fmt.Errorf("fill %s: %w", out.table, err)
		}
		bar.update(phase("expire: fill "+out.table), min(i+timeseries.MaxBatch, len(out.events)), len(out.events))
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
}

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

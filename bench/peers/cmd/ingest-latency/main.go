// Package main is the ingest-latency command, which measures the latency
// of event writes to `ebb serve` under steady ingest: conns connections,
// each posting batches of events as fast as it is answered, for a while,
// after a warm-up. It starts the server itself (from the binary -ebb
// names, on a fresh data directory, synced as shipped) and prints, as
// Markdown, the latency percentiles with p99 over p50, and beside them
// what the server's /metrics say happened meanwhile: Pebble's write
// stalls, flushes, compactions, level 0 and compaction debt, and the Go
// collector's pauses.
//
//	make build && cd bench/peers && go run ./cmd/ingest-latency -ebb ../../bin/ebb
//
// With -variant (repeatable) it compares servers: each variant is a label,
// a binary and environment variables (GOGC, GOMEMLIMIT, GODEBUG...), and
// the rounds alternate between them, their order rotated each round, so
// that the machine's load falls on all alike. A table of each variant's
// median and range, and its throughput as a ratio of the first variant's
// in the same round, follows the tables of every round.
//
//	go run ./cmd/ingest-latency -rounds 3 \
//	  -variant 'default;../../bin/ebb;GOMEMLIMIT=off' \
//	  -variant 'limit;../../bin/ebb;GOGC=400 GOMEMLIMIT=512MiB'
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ingest-latency:", err)
		os.Exit(1)
	}
}

type config struct {
	ebb      string
	variants []variant
	conns    int
	batch    int
	payload  int
	ids      int
	warmup   time.Duration
	duration time.Duration
	rounds   int
}

func run() error {
	var c config
	flag.StringVar(&c.ebb, "ebb", "", "path of the ebb binary to serve (required)")
	flag.IntVar(&c.conns, "conns", 16, "connections writing at once")
	flag.IntVar(&c.batch, "batch", 100, "events per request")
	flag.IntVar(&c.payload, "payload", 100, "payload bytes per event")
	flag.IntVar(&c.ids, "ids", 1000, "index ids the events are spread over")
	flag.DurationVar(&c.warmup, "warmup", 5*time.Second, "writing before latencies are recorded")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "writing while latencies are recorded")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds, each on a fresh server; the tables hold every round and the medians")
	flag.Func("variant", "`label;binary;ENV=V ENV=V` a server to compare (repeatable; rounds alternate between variants)", func(v string) error {
		parts := strings.SplitN(v, ";", 3)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			return errors.New("want label;binary[;ENV=V ...]")
		}
		va := variant{label: parts[0], bin: parts[1]}
		if len(parts) == 3 {
			va.env = strings.Fields(parts[2])
		}
		c.variants = append(c.variants, va)
		return nil
	})
	flag.Parse()
	if c.ebb == "" && len(c.variants) == 0 {
		return errors.New("-ebb: the path of the ebb binary is required (make build: bin/ebb), or -variant")
	}
	if len(c.variants) == 0 {
		c.variants = []variant{{label: "ebb", bin: c.ebb}}
	}
	if c.conns < 1 || c.batch < 1 || c.ids < 1 || c.payload < 0 || c.rounds < 1 || c.duration <= 0 || c.warmup < 0 {
		return errors.New("-conns, -batch, -ids, -rounds and -duration must be positive, -payload and -warmup not negative")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rounds := make([][]roundResult, len(c.variants))
	for i := 1; i <= c.rounds; i++ {
		for j := range c.variants {
			k := (j + i - 1) % len(c.variants)
			v := c.variants[k]
			r, err := round(ctx, c, v)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", i, v.label, err)
			}
			fmt.Fprintf(os.Stderr, "round %d, %s: %.0f events/s, p50 %s, p99 %s, max %s; %.0f write stalls (%.2f s); %.0f GCs, max pause %.1f ms\n",
				i, v.label, r.eventsPerSecond, ms(r.p50), ms(r.p99), ms(r.max), r.stallsMemtables+r.stallsL0, r.stallSeconds, r.gcs, r.maxGCPause*1000)
			rounds[k] = append(rounds[k], r)
		}
	}
	for k, v := range c.variants {
		if len(c.variants) > 1 {
			fmt.Fprintf(os.Stdout, "\n### %s: %s %s\n", v.label, v.bin, strings.Join(v.env, " "))
		}
		printTables(os.Stdout, c, rounds[k])
	}
	if len(c.variants) > 1 {
		printComparison(os.Stdout, c, rounds)
	}
	return nil
}

// variant is a server to measure: a binary and its environment.
type variant struct {
	label string
	bin   string
	env   []string // KEY=VALUE, added to this process's environment
}

// roundResult is one round: the latencies and what the server's metrics
// moved by meanwhile.
type roundResult struct {
	requests                          int
	eventsPerSecond                   float64
	p50, p90, p99, p999, max          time.Duration
	stallsMemtables, stallsL0         float64
	stallSeconds                      float64
	flushes, compactions              float64
	maxL0Files, maxSublevels, maxDebt float64
	gcs, gcPauseSeconds, maxGCPause   float64
	cpuSeconds, maxRSS                float64 // the server's CPU over the measured time; its peak resident memory
}

// round starts a server on a fresh directory, writes for the warm-up and
// the measured time, and stops it.
func round(ctx context.Context, c config, v variant) (roundResult, error) {
	var r roundResult
	dir, err := os.MkdirTemp("", "ebb-ingest-latency-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	base, stopServer, err := serve(ctx, v, dir)
	if err != nil {
		return r, err
	}
	defer stopServer()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: c.conns, MaxIdleConnsPerHost: c.conns, MaxConnsPerHost: c.conns}}
	defer client.CloseIdleConnections()
	if err := do(ctx, client, "PUT", base+"/v1/indexes/ingest", []byte(`{"table_bucket":"24h","partition_bucket":"1h","retention":"168h"}`)); err != nil {
		return r, fmt.Errorf("create index: %w", err)
	}

	// Every connection writes until stop; latencies count from measureFrom.
	start := time.Now()
	measureFrom, stopAt := start.Add(c.warmup), start.Add(c.warmup+c.duration)
	lats := make([][]time.Duration, c.conns)
	errs := make([]error, c.conns)
	var wg sync.WaitGroup
	for k := range c.conns {
		wg.Go(func() {
			w := newWriter(c, k)
			for {
				body := w.body(time.Now())
				t0 := time.Now()
				if t0.After(stopAt) {
					return
				}
				if err := do(ctx, client, "POST", base+"/v1/indexes/ingest/events", body); err != nil {
					errs[k] = err
					return
				}
				if t0.After(measureFrom) {
					lats[k] = append(lats[k], time.Since(t0))
				}
			}
		})
	}
	// Meanwhile, the engine's gauges every 250 ms, and its counters at the
	// start and end of the measured time.
	var before, after map[string]float64
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for now := range tick.C {
		if now.After(stopAt) || ctx.Err() != nil {
			break
		}
		m, err := scrape(client, base)
		if err != nil {
			return r, err
		}
		if now.After(measureFrom) {
			if before == nil {
				before = m
			}
			r.maxL0Files = max(r.maxL0Files, m["ebb_pebble_l0_files"])
			r.maxSublevels = max(r.maxSublevels, m["ebb_pebble_l0_sublevels"])
			r.maxDebt = max(r.maxDebt, m["ebb_pebble_compaction_debt_bytes"])
			r.maxGCPause = max(r.maxGCPause, m[`go_gc_duration_seconds{quantile="1"}`])
			r.maxRSS = max(r.maxRSS, m["process_resident_memory_bytes"])
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	if after, err = scrape(client, base); err != nil {
		return r, err
	}
	if before == nil {
		return r, errors.New("the measured time ended before the first scrape; raise -duration")
	}
	delta := func(name string) float64 { return after[name] - before[name] }
	r.stallsMemtables = delta(`ebb_pebble_write_stalls_total{reason="memtables"}`)
	r.stallsL0 = delta(`ebb_pebble_write_stalls_total{reason="l0"}`)
	r.stallSeconds = delta("ebb_pebble_write_stall_seconds_total")
	r.flushes = delta("ebb_pebble_flushes_total")
	r.compactions = delta("ebb_pebble_compactions_total")
	r.gcs = delta("go_gc_duration_seconds_count")
	r.gcPauseSeconds = delta("go_gc_duration_seconds_sum")
	r.cpuSeconds = delta("process_cpu_seconds_total")

	all := slices.Concat(lats...)
	if len(all) == 0 {
		return r, errors.New("no request completed in the measured time")
	}
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	r.requests = len(all)
	r.eventsPerSecond = float64(len(all)*c.batch) / c.duration.Seconds()
	r.p50, r.p90, r.p99, r.p999, r.max = q(0.5), q(0.9), q(0.99), q(0.999), all[len(all)-1]
	return r, nil
}

// serve starts `ebb serve` on a free loopback port with its data in dir
// and returns its base URL once it is healthy, and a function that stops
// it and waits for it.
func serve(ctx context.Context, v variant, dir string) (string, func(), error) {
	cmd := exec.CommandContext(ctx, v.bin, "serve", "--addr", "127.0.0.1:0", "--data", dir, "--log-level", "error")
	cmd.Env = append(os.Environ(), v.env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	// The server prints "ebb serving http://HOST:PORT (...)" once it
	// listens. The reader runs until the server exits and closes its end
	// of the pipe; stop waits for it before Wait closes ours.
	urls := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(urls)
		sc := bufio.NewScanner(stdout)
		for sent := false; sc.Scan(); {
			if f := strings.Fields(sc.Text()); !sent && len(f) >= 3 && f[0] == "ebb" && f[1] == "serving" {
				urls <- f[2]
				sent = true
			}
		}
	}()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-read
		_ = cmd.Wait()
	}
	select {
	case url, ok := <-urls:
		if !ok {
			stop()
			return "", nil, errors.New("ebb serve exited before serving")
		}
		return url, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, errors.New("ebb serve did not start within 30 s")
	}
}

// writer builds one connection's request bodies: fresh event ids, the
// current time, payloads cut from one random buffer.
type writer struct {
	c       config
	conn, n int
	payload string // base64 of the payload bytes
	buf     []byte
}

func newWriter(c config, conn int) *writer {
	raw := make([]byte, c.payload)
	for i := range raw {
		raw[i] = byte('a' + (i*7+conn*13)%26)
	}
	return &writer{c: c, conn: conn, payload: base64.StdEncoding.EncodeToString(raw)}
}

func (w *writer) body(now time.Time) []byte {
	b := append(w.buf[:0], `{"events":[`...)
	ts := now.UTC().Format("2006-01-02T15:04:05.000Z")
	for i := range w.c.batch {
		if i > 0 {
			b = append(b, ',')
		}
		w.n++
		b = append(b, `{"index_id":"account-`...)
		b = strconv.AppendInt(b, int64((w.n*31+w.conn)%w.c.ids), 10)
		b = append(b, `","event_id":"c`...)
		b = strconv.AppendInt(b, int64(w.conn), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(w.n), 10)
		b = append(b, `","timestamp":"`...)
		b = append(b, ts...)
		b = append(b, `","payload":"`...)
		b = append(b, w.payload...)
		b = append(b, `"}`...)
	}
	w.buf = append(b, `]}`...)
	return w.buf
}

// do sends one request and reads the whole answer, failing on any status
// but 200 and 201.
func do(ctx context.Context, client *http.Client, method, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, answer)
	}
	return nil
}

// scrape reads the server's /metrics into a map from each sample's name
// and labels, as the text format writes them, to its value.
func scrape(client *http.Client, base string) (map[string]float64, error) {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// printTables prints every round and the median of each column.
func printTables(w io.Writer, c config, rounds []roundResult) {
	fmt.Fprintf(w, "\n%d connections, %d events of %d bytes per request, %s measured after %s of warm-up; %d rounds, each on a fresh server\n\n",
		c.conns, c.batch, c.payload, c.duration, c.warmup, len(rounds))
	fmt.Fprintln(w, "| round | events/s | p50 | p90 | p99 | p99.9 | max | p99 / p50 |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	col := func(f func(roundResult) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		return median(v)
	}
	d := func(f func(roundResult) time.Duration) func(roundResult) float64 {
		return func(r roundResult) float64 { return float64(f(r)) }
	}
	row := func(name string, eps, p50, p90, p99, p999, mx, ratio float64) {
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %.1f |\n", name, eps,
			ms(time.Duration(p50)), ms(time.Duration(p90)), ms(time.Duration(p99)), ms(time.Duration(p999)), ms(time.Duration(mx)), ratio)
	}
	for i, r := range rounds {
		row(strconv.Itoa(i+1), r.eventsPerSecond, float64(r.p50), float64(r.p90), float64(r.p99), float64(r.p999), float64(r.max), float64(r.p99)/float64(r.p50))
	}
	row("median", col(func(r roundResult) float64 { return r.eventsPerSecond }),
		col(d(func(r roundResult) time.Duration { return r.p50 })), col(d(func(r roundResult) time.Duration { return r.p90 })),
		col(d(func(r roundResult) time.Duration { return r.p99 })), col(d(func(r roundResult) time.Duration { return r.p999 })),
		col(d(func(r roundResult) time.Duration { return r.max })),
		col(func(r roundResult) float64 { return float64(r.p99) / float64(r.p50) }))

	fmt.Fprintln(w, "\nWhat the server's /metrics moved by over the measured time (the maxima sampled every 250 ms):")
	fmt.Fprintln(w, "\n| round | write stalls: memtables | write stalls: L0 | stalled s | flushes | compactions | max L0 files | max L0 sublevels | max compaction debt | GCs | GC pause s | max GC pause |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for i, r := range rounds {
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.3f | %.0f | %.0f | %.0f | %.0f | %.1f MB | %.0f | %.3f | %.1f ms |\n", i+1,
			r.stallsMemtables, r.stallsL0, r.stallSeconds, r.flushes, r.compactions, r.maxL0Files, r.maxSublevels, r.maxDebt/1e6,
			r.gcs, r.gcPauseSeconds, r.maxGCPause*1000)
	}
}

// printComparison prints each variant's medians and ranges over its
// rounds, and its throughput against the first variant's in the same
// round, the ratio that the machine's load cancels out of.
func printComparison(w io.Writer, c config, rounds [][]roundResult) {
	fmt.Fprintf(w, "\n### Variants side by side: median (range) over %d alternating rounds\n\n", c.rounds)
	fmt.Fprintln(w, "| variant | events/s | vs first, same round | p50 | p99 | p99.9 | p99 / p50 | GCs | max GC pause | server CPU per 1k events | peak RSS |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for k, v := range c.variants {
		rs := rounds[k]
		stat := func(f func(i int, r roundResult) float64, format func(float64) string) string {
			vals := make([]float64, len(rs))
			for i, r := range rs {
				vals[i] = f(i, r)
			}
			return fmt.Sprintf("%s (%s–%s)", format(median(vals)), format(slices.Min(vals)), format(slices.Max(vals)))
		}
		num := func(format string) func(float64) string {
			return func(x float64) string { return fmt.Sprintf(format, x) }
		}
		msf := func(x float64) string { return ms(time.Duration(x)) }
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v.label,
			stat(func(_ int, r roundResult) float64 { return r.eventsPerSecond }, num("%.0f")),
			stat(func(i int, r roundResult) float64 { return r.eventsPerSecond / rounds[0][i].eventsPerSecond }, num("%.2f")),
			stat(func(_ int, r roundResult) float64 { return float64(r.p50) }, msf),
			stat(func(_ int, r roundResult) float64 { return float64(r.p99) }, msf),
			stat(func(_ int, r roundResult) float64 { return float64(r.p999) }, msf),
			stat(func(_ int, r roundResult) float64 { return float64(r.p99) / float64(r.p50) }, num("%.1f")),
			stat(func(_ int, r roundResult) float64 { return r.gcs }, num("%.0f")),
			stat(func(_ int, r roundResult) float64 { return r.maxGCPause * 1000 }, num("%.1f ms")),
			stat(func(_ int, r roundResult) float64 {
				return r.cpuSeconds * 1e3 / (r.eventsPerSecond * c.duration.Seconds()) * 1e3
			}, num("%.0f ms")),
			stat(func(_ int, r roundResult) float64 { return r.maxRSS / (1 << 20) }, num("%.0f MiB")))
	}
}

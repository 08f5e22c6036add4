//go:build unix

// Package main is the ingest-null command: a stand-in for `ebb serve`
// that does nothing but read each request's body and answer it as ebb
// does, so that ingest-latency can measure its own floor, the latency
// spread of the load generator, net/http and the machine alone, beside
// ebb in the same run:
//
//	go build -o /tmp/ingest-null ./cmd/ingest-null
//	go run ./cmd/ingest-latency -variant 'ebb;../../bin/ebb;' -variant 'null;/tmp/ingest-null;'
//
// It takes `serve` and ebb's --addr flag (the others ingest-latency
// passes are accepted and ignored), prints the line ebb prints once it
// listens, answers an event write 200 with {"written":N} (N the events in
// the body, counted without parsing it), any other request with a body
// 200 with {}, and GET /metrics with the few samples ingest-latency reads
// that a process without a store has: its CPU seconds, resident memory
// and the collector's runs. It stops on SIGINT or SIGTERM.
//
// INGEST_NULL_WORK=DURATION (say 1ms) makes each event write also spend
// about that much CPU in a loop of fixed work, calibrated at start, so
// that the stand-in costs what ebb costs a request (ingest-latency's
// "server CPU per 1k events": ebb's 10 to 14 ms are 1 to 1.4 ms a request
// of 100 events) with none of ebb's variance: no flush, compaction, fsync
// or collection. Its spread is then what the load generator and queueing
// on the machine's cores alone give at that cost:
//
//	go run ./cmd/ingest-latency -variant 'ebb;../../bin/ebb;' \
//	  -variant 'null-1ms;/tmp/ingest-null;INGEST_NULL_WORK=1ms'
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ingest-null:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] != "serve" {
		return errors.New("usage: ingest-null serve --addr HOST:PORT [ebb serve's other flags, ignored]")
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:7070", "address to listen on")
	fs.String("data", "", "ignored: nothing is stored")
	fs.String("log-level", "", "ignored: nothing is logged")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var spins int
	if v := os.Getenv("INGEST_NULL_WORK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("INGEST_NULL_WORK=%q: want a duration such as 1ms", v)
		}
		spins = calibrate(d)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(spins), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("ebb serving http://%s (ingest-null: nothing is stored)\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The server is stopped by Shutdown once a signal comes; Serve
	// returns then, and run waits for both.
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// bufs holds the bodies' buffers, as ebb's event write reads its body into
// a pooled buffer sized by Content-Length.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func handler(spins int) http.Handler {
	eventID := []byte(`"event_id"`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/metrics" {
			writeMetrics(w)
			return
		}
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		buf.Reset()
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength))
		}
		if _, err := io.Copy(buf, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") {
			spin(spins)
			b := strconv.AppendInt([]byte(`{"written":`), int64(bytes.Count(buf.Bytes(), eventID)), 10)
			w.Write(append(b, "}\n"...))
			return
		}
		w.Write([]byte("{}\n"))
	})
}

// writeMetrics writes, in Prometheus' text format, the samples of
// ingest-latency's tables that this process has.
func writeMetrics(w http.ResponseWriter) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "process_cpu_seconds_total %g\n", cpu)
	// Maxrss is the peak, in KiB on Linux (in bytes on macOS).
	fmt.Fprintf(w, "process_resident_memory_bytes %d\n", ru.Maxrss*1024)
	fmt.Fprintf(w, "go_gc_duration_seconds_count %d\n", s[0].Value.Uint64())
}

// sink keeps the compiler from removing spin's loop.
var sink uint64

// spin does n rounds of fixed work.
func spin(n int) {
	x := sink | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink = x
}

// calibrate returns the rounds of spin that take d of this thread's CPU,
// measured on a locked thread by its own CPU clock, so that waiting for a
// core while calibrating does not count; the best of five tries.
func calibrate(d time.Duration) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n = 1 << 20
	best := time.Duration(1<<63 - 1)
	for range 5 {
		t0 := threadCPU()
		spin(n)
		best = min(best, threadCPU()-t0)
	}
	return int(float64(n) * float64(d) / float64(max(best, 1)))
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

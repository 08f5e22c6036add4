package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/pflag"
)

// The Go scheduler's processors (GOMAXPROCS) of `ebb serve`. With one
// per CPU, the runtime's default, a flush or compaction running on one of
// them leaves the others to every request and to the write-ahead log's
// writer, the one goroutine whose sync each committed write waits for: on
// two cores under sixteen writers that writer waited for a processor
// hundreds of times a second, and every writer of its group commit waited
// with it. With twice as many processors as CPUs the operating system
// shares the cores among the runtime's threads, so that goroutine runs
// sooner. Measured on an idle 2-core machine (docs/performance.md, "Tail
// of ingest"): p99 / p50 of event writes at 16 connections 2.8 (2.6 to
// 2.9) against 4.2 (3.6 to 4.2), at 1.03 of the throughput; list reads
// unchanged.
//
// What the operator sets wins: GOMAXPROCS in the environment is left
// alone unless --procs is given too.

// procsPerCPU is how many processors the server runs per CPU the runtime
// would use by default.
const procsPerCPU = 2

func addProcsFlag(f *pflag.FlagSet, n *int) {
	f.IntVar(n, "procs", 0, fmt.Sprintf("goroutines the Go runtime runs at once (as GOMAXPROCS); 0: %d per CPU available (the machine's, or the cgroup's CPU limit); a GOMAXPROCS in the environment is kept unless this flag is given", procsPerCPU))
}

// resolveProcs returns the GOMAXPROCS the server sets from --procs (n,
// given when on the command line or in the config file) and the
// environment, 0 to leave the runtime's as it is. cpus is the runtime's
// own default: the CPUs available to the process.
func resolveProcs(n int, given bool, getenv func(string) string, cpus int) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("--procs %d is negative; 0 takes the default", n)
	case n > 0:
		return n, nil
	case !given && getenv("GOMAXPROCS") != "":
		// The runtime read it at start.
		return 0, nil
	default:
		return procsPerCPU * max(cpus, 1), nil
	}
}

// runtimeCPUs is the runtime's default GOMAXPROCS: what it chose at start
// (the CPUs, within the cgroup's limit) unless GOMAXPROCS in the
// environment chose instead, else the machine's CPUs.
func runtimeCPUs(getenv func(string) string) int {
	if getenv("GOMAXPROCS") == "" {
		return runtime.GOMAXPROCS(0)
	}
	return runtime.NumCPU()
}

package main

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// The Go collector's settings of `ebb serve`. Under steady ingest the
// server's live heap is small (some 6 MB: Pebble's memtables and block
// cache are outside it) while it allocates tens of megabytes a second, so
// with the runtime's default (GOGC=100: collect when the heap has doubled)
// it collected 30 to 80 times a second, and on a loaded machine each
// collection's pauses waited for a core and made the write latency's tail.
// The server therefore runs with a higher GOGC, collecting when the heap
// has grown by defaultGCPercent, under a soft memory limit that makes it
// collect sooner should the heap approach the limit: the higher
// percentage costs memory only while the limit leaves room for it.
//
// What the operator sets wins: GOGC or GOMEMLIMIT in the environment is
// left alone unless the flag is given too, and the flags (or the config
// file) override both.

// defaultGCPercent is the GOGC the server runs with under a memory limit.
const defaultGCPercent = 400

// defaultMemoryShare is the part of the memory available to the process
// (its cgroup's limit, else the machine's) that the automatic soft limit
// takes: the rest is for Pebble's block cache and memtables, which live
// outside the Go heap, and the operating system's page cache.
const defaultMemoryShare = 0.25

// gcConfig is what --memory-limit and --gc-percent ask for.
type gcConfig struct {
	memoryLimit string // "auto", "off", a size (512MiB, 2GiB, bytes) or a share ("25%")
	gcPercent   int    // -1: off, as GOGC=off
}

func addGCFlags(f *pflag.FlagSet, c *gcConfig) {
	f.StringVar(&c.memoryLimit, "memory-limit", "auto", "soft limit of the Go runtime's memory (as GOMEMLIMIT): a size (512MiB, 2GiB), a share of the memory available (25%: of the cgroup's limit, else of the machine's), off, or auto: 25% of the memory available, with --gc-percent "+strconv.Itoa(defaultGCPercent)+"; a GOMEMLIMIT in the environment is kept unless this flag is given")
	f.IntVar(&c.gcPercent, "gc-percent", defaultGCPercent, "heap growth, in percent of the live heap, that starts a collection (as GOGC; -1: off, collecting only at --memory-limit); applies under a memory limit only, unless given; a GOGC in the environment is kept unless this flag is given")
}

// gcSettings is what the server applies: the soft limit in bytes
// (math.MaxInt64: none) and the GC percentage (-1: off), each with
// whether to set it at all.
type gcSettings struct {
	limit      int64
	setLimit   bool
	percent    int
	setPercent bool
}

// resolveGC turns the flags and the environment into settings. available
// is the memory available to the process in bytes, 0 when unknown.
func resolveGC(c gcConfig, flags *pflag.FlagSet, getenv func(string) string, available int64) (gcSettings, error) {
	var s gcSettings
	limitGiven, percentGiven := flags.Changed("memory-limit"), flags.Changed("gc-percent")
	if c.gcPercent < -1 {
		return s, fmt.Errorf("--gc-percent %d: want -1 (off) or more", c.gcPercent)
	}
	// limited: a soft limit will be in force.
	limited := getenv("GOMEMLIMIT") != "" && getenv("GOMEMLIMIT") != "off"
	switch {
	case !limitGiven && getenv("GOMEMLIMIT") != "":
		// The runtime read it at start.
	default:
		limit, err := parseMemoryLimit(c.memoryLimit, available)
		if err != nil {
			return s, err
		}
		s.limit, s.setLimit = limit, true
		limited = limit != math.MaxInt64
	}
	switch {
	case percentGiven:
		s.percent, s.setPercent = c.gcPercent, true
	case getenv("GOGC") != "":
		// The runtime read it at start.
	case limited:
		s.percent, s.setPercent = c.gcPercent, true
	}
	if s.setPercent && s.percent == -1 && !limited {
		return s, fmt.Errorf("--gc-percent -1 turns the collector off, which needs a memory limit (--memory-limit or GOMEMLIMIT) to collect at all")
	}
	return s, nil
}

// apply sets the runtime's limit and percentage.
func (s gcSettings) apply() {
	if s.setLimit {
		debug.SetMemoryLimit(s.limit)
	}
	if s.setPercent {
		debug.SetGCPercent(s.percent)
	}
}

// parseMemoryLimit reads --memory-limit: math.MaxInt64 for none.
func parseMemoryLimit(v string, available int64) (int64, error) {
	switch {
	case v == "off":
		return math.MaxInt64, nil
	case v == "auto":
		if available <= 0 {
			return math.MaxInt64, nil
		}
		return int64(float64(available) * defaultMemoryShare), nil
	case strings.HasSuffix(v, "%"):
		p, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || p <= 0 || p > 100 {
			return 0, fmt.Errorf("--memory-limit %s: want a share from 0%% (excluded) to 100%%", v)
		}
		if available <= 0 {
			return 0, fmt.Errorf("--memory-limit %s: the memory available is unknown here; give a size (512MiB, 2GiB)", v)
		}
		return int64(float64(available) * p / 100), nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}, {"", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n <= 0 || n > math.MaxInt64/u.mult {
				break
			}
			return n * u.mult, nil
		}
	}
	return 0, fmt.Errorf("--memory-limit %q: want auto, off, a size (512MiB, 2GiB, bytes) or a share (25%%)", v)
}

// memoryAvailable is the memory the process may use: its cgroup's limit
// when it has one (version 2, then 1), else the machine's memory; 0 when
// neither is known.
func memoryAvailable() int64 {
	total := machineMemory()
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 {
			continue // "max": no limit
		}
		if total > 0 && n >= total {
			break // version 1 writes "no limit" as a huge number
		}
		return n
	}
	return total
}

// gcPercentText is the GC percentage in force after apply, for the log.
func (s gcSettings) gcPercentText(getenv func(string) string) string {
	switch {
	case s.setPercent && s.percent < 0:
		return "off"
	case s.setPercent:
		return strconv.Itoa(s.percent)
	case getenv("GOGC") != "":
		return getenv("GOGC") + " (GOGC)"
	}
	return "100"
}

package expiry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
)

// Options configures Wrap. The zero value of every field selects its
// default; DefaultOptions lists them.
type Options struct {
	// Window is the width of one expiry window, the unit by which the
	// sweeper's watermark advances. Whole milliseconds, at least 1 ms.
	// Default 1s. It is recorded with the watermark: reopening an index
	// with a different Window (or Shards) is refused, because entries
	// already written could no longer be found.
	Window time.Duration
	// Shards is how many index partitions one window is spread over, so
	// that no window is a hot partition. 1..1024, default 16.
	Shards int
	// Grace bounds how long a Write takes from reading the clock to the row
	// landing, plus the clock skew between processes sharing the backend.
	// No row is swept sooner than Grace after its write started (so rows
	// with a TTL shorter than Grace go Grace after their write), and a
	// Write that took longer re-indexes its rows. Default 1s.
	Grace time.Duration
	// Now is the clock. It must be the clock the wrapped Store resolves
	// expiry with, since a physical delete is conditional on the backend
	// agreeing that the row has expired. Nil means time.Now.
	Now func() time.Time
	// Logger receives sweep summaries and errors. Nil discards.
	Logger *slog.Logger
	// Registerer receives the metrics. Nil registers nothing.
	Registerer prometheus.Registerer
	// SweepInterval is the sweeper loop's tick while entries are due or
	// falling due in the current window. After a pass that found entries
	// the next one comes sooner, once about a BatchSize of them has fallen
	// due at the rate that pass found them, but no sooner than
	// SweepInterval/10 (Sweeper.Next). Default 1s.
	SweepInterval time.Duration
	// IdleInterval bounds how long the sweeper sleeps when no window it
	// knows of holds entries (see Sweeper.Next): a write through this
	// process wakes it at once, but one through another replica sharing
	// the backend is seen only when it next reads the due markers, at
	// most IdleInterval later. An idle sweeper reads once per
	// IdleInterval. Default 10s, at least SweepInterval.
	IdleInterval time.Duration
	// MaxDeletesPerSecond paces physical deletes so that a mass expiry does
	// not starve foreground traffic. Zero means unlimited.
	MaxDeletesPerSecond float64
	// BatchSize is the number of deletes per Write. Default
	// Capabilities().DeleteBatch of the wrapped Store, or 100.
	BatchSize int
	// Parallelism is how many index partitions of one window are read at
	// once, and how many batches of deletes are in flight. Default 4, and
	// cqlParallelism on the CQL backend, whose conditional deletes wait on
	// round trips (a read and a write per partition of a batch) that the
	// cluster serves in parallel.
	Parallelism int
	// Exclude, if set, reports tables whose writes are not indexed (for
	// example time-sharded index shards, which expire by drop).
	Exclude func(table string) bool
	// CacheTTL is how long a table's cached spec is trusted before it is
	// read again (another process may drop and re-create the table).
	// Default store.DefaultCacheTTL.
	CacheTTL time.Duration
	// Removed, if set, is told of the rows a pass deletes, before it
	// deletes them (removed.go): the log of expirations records them
	// there, so that a crash between the two repeats the record rather
	// than losing it. An error holds the delete; the pass retries it.
	Removed func(ctx context.Context, table string, rows []Removed) error
}

// DefaultOptions returns the defaults that Wrap applies to zero fields
// (BatchSize, Now and, on the CQL backend, Parallelism excepted: they
// depend on the wrapped Store and the environment).
func DefaultOptions() Options {
	return Options{
		Window:        time.Second,
		Shards:        16,
		Grace:         time.Second,
		SweepInterval: time.Second,
		IdleInterval:  10 * time.Second,
		Parallelism:   4,
		CacheTTL:      store.DefaultCacheTTL,
	}
}

// cqlParallelism is the default Parallelism on the CQL backend. On one
// Cassandra node a mass expiry was deleted 3.85 times as fast with 16
// batches in flight as with 4 (1.4 to 5.5 in six rounds), and no faster
// for certain with 32; on DynamoDB Local 16 were no faster than 4, the
// emulator serving the requests at its own pace (docs/performance.md,
// "Ceilings on the remote backends").
const cqlParallelism = 16

// maxShards bounds Shards: every pass reads Shards partitions per window.
const maxShards = 1024

// Validate checks the options (after defaults are applied to zero fields)
// and returns an error wrapping store.ErrInvalid.
func (o Options) Validate() error {
	o = o.withDefaults(store.Capabilities{})
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, store.Errorf(store.ErrInvalid, "expiry: %s", fmt.Sprintf(format, args...)))
	}
	if o.Window < time.Millisecond || o.Window%time.Millisecond != 0 {
		bad("window %s must be a positive whole number of milliseconds", o.Window)
	}
	if o.Shards < 1 || o.Shards > maxShards {
		bad("shards %d outside 1..%d", o.Shards, maxShards)
	}
	if o.Grace < 0 {
		bad("negative grace %s", o.Grace)
	}
	if o.SweepInterval < 0 {
		bad("negative sweep interval %s", o.SweepInterval)
	}
	if o.IdleInterval < 0 {
		bad("negative idle interval %s", o.IdleInterval)
	}
	if o.MaxDeletesPerSecond < 0 {
		bad("negative max deletes per second %g", o.MaxDeletesPerSecond)
	}
	if o.BatchSize < 0 {
		bad("negative batch size %d", o.BatchSize)
	}
	if o.Parallelism < 0 {
		bad("negative parallelism %d", o.Parallelism)
	}
	if o.CacheTTL < 0 {
		bad("negative cache TTL %s", o.CacheTTL)
	}
	return errors.Join(errs...)
}

// withDefaults fills zero fields. caps are the wrapped Store's (zero if
// unknown): its backend and its preferred delete batch.
func (o Options) withDefaults(caps store.Capabilities) Options {
	d := DefaultOptions()
	if o.Window == 0 {
		o.Window = d.Window
	}
	if o.Shards == 0 {
		o.Shards = d.Shards
	}
	if o.Grace == 0 {
		o.Grace = d.Grace
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = d.SweepInterval
	}
	if o.IdleInterval == 0 {
		o.IdleInterval = d.IdleInterval
	}
	o.IdleInterval = max(o.IdleInterval, o.SweepInterval)
	if o.Parallelism == 0 {
		o.Parallelism = d.Parallelism
		if caps.Backend == "cql" {
			o.Parallelism = cqlParallelism
		}
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = d.CacheTTL
	}
	if o.BatchSize == 0 {
		o.BatchSize = caps.DeleteBatch
		if o.BatchSize <= 0 {
			o.BatchSize = 100
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

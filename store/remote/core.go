package remote

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ebb-data/ebb/internal/parallel"
	"github.com/ebb-data/ebb/store"
)

// Parallelism bounds the requests one call (a Write's chunks, a partition
// delete's batches) has in flight, so that one large call cannot take
// every connection.
const Parallelism = 8

// RunAll runs tasks, at most Parallelism at a time; see parallel.Run.
func RunAll(ctx context.Context, tasks []func(context.Context) error) error {
	return parallel.Run(ctx, Parallelism, tasks)
}

// Core starts a remote Store's operations: it holds the closed flag and
// the two timeouts. It is safe for concurrent use; use it by pointer.
type Core struct {
	timeout, tableTimeout time.Duration
	closed                atomic.Bool
}

// NewCore returns an open Core with c's timeouts (defaults filled).
func NewCore(c Common) *Core {
	return &Core{timeout: c.Timeout, tableTimeout: c.TableTimeout}
}

// Begin starts a data operation: store.ErrClosed once closed, ctx's error
// when the caller has already given up (nothing is sent for it), and
// otherwise ctx bounded by Timeout, retries included.
func (c *Core) Begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if c.closed.Load() {
		return nil, nil, store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	return ctx, cancel, nil
}

// BeginTable is Begin for table operations, which wait for the service
// and are bounded by TableTimeout instead.
func (c *Core) BeginTable(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if c.closed.Load() {
		return nil, nil, store.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, c.tableTimeout)
	return ctx, cancel, nil
}

// Close marks the Core closed; it reports whether this call closed it, so
// that what is released once is released once.
func (c *Core) Close() bool { return !c.closed.Swap(true) }

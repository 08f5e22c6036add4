package remote

import (
	"context"
	"strings"
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

// Core starts a remote Store's operations: it holds the closed flag, the
// two timeouts and the backend's rule for table names, and it applies what
// the store contract says about the start of each operation the same way
// on every backend. It is safe for concurrent use; use it by pointer.
type Core struct {
	timeout, tableTimeout time.Duration
	reserved              string
	closed                atomic.Bool
}

// NewCore returns an open Core with c's timeouts (defaults filled). Table
// names starting with reserved (when not empty) are the backend's own and
// never ebb tables.
func NewCore(c Common, reserved string) *Core {
	return &Core{timeout: c.Timeout, tableTimeout: c.TableTimeout, reserved: reserved}
}

// Valid reports whether name can be an ebb table of the backend: it
// matches store.NamePattern and is not one of the backend's own names.
func (c *Core) Valid(name string) bool {
	return store.NamePattern.MatchString(name) && (c.reserved == "" || !strings.HasPrefix(name, c.reserved))
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

// BeginWrite is Begin for a Write of n mutations: after Begin's checks, an
// empty batch is done at once (done true, nothing to cancel), whatever
// the table.
func (c *Core) BeginWrite(ctx context.Context, n int) (_ context.Context, _ context.CancelFunc, done bool, err error) {
	ctx, cancel, err := c.Begin(ctx)
	if err != nil || n > 0 {
		return ctx, cancel, false, err
	}
	cancel()
	return nil, nil, true, nil
}

// BeginDrop is BeginTable for DropTable: after its check, dropping a name
// that cannot be a table is done at once (done true, nothing to cancel),
// since there is nothing to drop.
func (c *Core) BeginDrop(ctx context.Context, name string) (_ context.Context, _ context.CancelFunc, done bool, err error) {
	ctx, cancel, err := c.BeginTable(ctx)
	if err != nil || c.Valid(name) {
		return ctx, cancel, false, err
	}
	cancel()
	return nil, nil, true, nil
}

// BeginCapacity is BeginTable for SetCapacity: a setting no provider
// accepts is refused first (checkCapacity), before anything else.
func (c *Core) BeginCapacity(ctx context.Context, capacity store.Capacity) (context.Context, context.CancelFunc, error) {
	if err := checkCapacity(capacity); err != nil {
		return nil, nil, err
	}
	return c.BeginTable(ctx)
}

// Close marks the Core closed; it reports whether this call closed it, so
// that what is released once is released once.
func (c *Core) Close() bool { return !c.closed.Swap(true) }

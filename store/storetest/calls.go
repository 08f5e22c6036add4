package storetest

import (
	"context"
	"sync"

	"github.com/ebb-data/ebb/store"
)

// Calls is a store.Store that counts the calls made through it by method
// name ("Tables", "Get", "Write", ...), so that a test can say how a
// component's store traffic grows: with the changes it makes, or with the
// tables that exist. It forwards every call to the Store it wraps.
type Calls struct {
	store.Store

	mu sync.Mutex
	n  map[string]int
}

// NewCalls wraps st.
func NewCalls(st store.Store) *Calls { return &Calls{Store: st, n: map[string]int{}} }

// Unwrap gives the wrapped store to store.As.
func (c *Calls) Unwrap() store.Store { return c.Store }

// Reset forgets the counts so far and returns them.
func (c *Calls) Reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

// Total is the number of calls of every method since the last Reset.
func (c *Calls) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, n := range c.n {
		t += n
	}
	return t
}

func (c *Calls) count(method string) {
	c.mu.Lock()
	c.n[method]++
	c.mu.Unlock()
}

// CreateTable counts and forwards.
func (c *Calls) CreateTable(ctx context.Context, spec store.TableSpec) error {
	c.count("CreateTable")
	return c.Store.CreateTable(ctx, spec)
}

// DropTable counts and forwards.
func (c *Calls) DropTable(ctx context.Context, name string) error {
	c.count("DropTable")
	return c.Store.DropTable(ctx, name)
}

// Tables counts and forwards.
func (c *Calls) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	c.count("Tables")
	return c.Store.Tables(ctx, prefix)
}

// Spec counts and forwards.
func (c *Calls) Spec(ctx context.Context, name string) (store.TableSpec, error) {
	c.count("Spec")
	return c.Store.Spec(ctx, name)
}

// SetCapacity counts and forwards.
func (c *Calls) SetCapacity(ctx context.Context, table string, cp store.Capacity) error {
	c.count("SetCapacity")
	return c.Store.SetCapacity(ctx, table, cp)
}

// Stats counts and forwards.
func (c *Calls) Stats(ctx context.Context, table string) (store.TableStats, error) {
	c.count("Stats")
	return c.Store.Stats(ctx, table)
}

// Write counts and forwards.
func (c *Calls) Write(ctx context.Context, table string, batch []store.Mutation) error {
	c.count("Write")
	return c.Store.Write(ctx, table, batch)
}

// Get counts and forwards.
func (c *Calls) Get(ctx context.Context, table string, partition, clustering []any) (store.Row, error) {
	c.count("Get")
	return c.Store.Get(ctx, table, partition, clustering)
}

// Scan counts and forwards.
func (c *Calls) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	c.count("Scan")
	return c.Store.Scan(ctx, table, q, fn)
}

// QueryIndex counts and forwards.
func (c *Calls) QueryIndex(ctx context.Context, table, index string, partition []any, value any) ([][]any, error) {
	c.count("QueryIndex")
	return c.Store.QueryIndex(ctx, table, index, partition, value)
}

// DeletePartition counts and forwards.
func (c *Calls) DeletePartition(ctx context.Context, table string, partition []any) error {
	c.count("DeletePartition")
	return c.Store.DeletePartition(ctx, table, partition)
}

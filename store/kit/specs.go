package kit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebb-data/ebb/store"
)

// SpecCache remembers, for ttl, what a decorator derives from each table's
// spec (the spec itself, or a summary of it), so that a write or read path
// does not ask the catalog on every call. It reads specs with the wrapped
// store's Catalog.Spec. The decorator calls Forget around its own
// CreateTable and DropTable, so that its changes are seen at once; a drop
// and re-create by another process is seen within ttl. Missing tables are
// not remembered, so that a table created elsewhere is seen at once. It is
// safe for concurrent use. Its map is copied on write: every call of a
// decorator reads it, and it changes only when a table is first seen, read
// again or forgotten, so a read takes no lock.
type SpecCache[V any] struct {
	src    store.Catalog
	ttl    time.Duration
	now    func() time.Time
	derive func(*store.TableSpec) V

	// mu serializes changes to entries and gen.
	mu sync.Mutex
	// gen counts Forget calls, so that a spec read before a Forget is not
	// remembered after it.
	gen     atomic.Uint64
	entries atomic.Pointer[map[string]specEntry[V]]
}

type specEntry[V any] struct {
	v       V
	fetched time.Time
}

// NewSpecCache returns a cache over src remembering derive(spec) for ttl,
// read against now (nil means time.Now). derive is called once per spec
// read and may keep the spec, which is its own copy.
func NewSpecCache[V any](src store.Catalog, ttl time.Duration, now func() time.Time, derive func(*store.TableSpec) V) *SpecCache[V] {
	if now == nil {
		now = time.Now
	}
	c := &SpecCache[V]{src: src, ttl: ttl, now: now, derive: derive}
	c.entries.Store(&map[string]specEntry[V]{})
	return c
}

// Get returns what was derived from the table's spec, read again once ttl
// has passed; an error wrapping store.ErrTableNotFound when the table is
// missing.
func (c *SpecCache[V]) Get(ctx context.Context, table string) (V, error) {
	now := c.now()
	e, ok := (*c.entries.Load())[table]
	if age := now.Sub(e.fetched); ok && age < c.ttl && age >= 0 {
		return e.v, nil
	}
	return c.Refresh(ctx, table)
}

// Refresh reads the table's spec again, as Get does once ttl has passed:
// for a caller whose cached spec turned out stale.
func (c *SpecCache[V]) Refresh(ctx context.Context, table string) (V, error) {
	gen := c.gen.Load()
	spec, err := c.src.Spec(ctx, table)
	if err != nil {
		if errors.Is(err, store.ErrTableNotFound) {
			c.drop(table)
		}
		var zero V
		return zero, err
	}
	v := c.derive(&spec)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() == gen {
		c.update(func(m map[string]specEntry[V]) { m[table] = specEntry[V]{v: v, fetched: c.now()} })
	}
	return v, nil
}

// Forget drops what is remembered of a table and returns it, if anything
// was: the decorator calls it around a CreateTable or DropTable of its own.
func (c *SpecCache[V]) Forget(table string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	e, ok := (*c.entries.Load())[table]
	if ok {
		c.update(func(m map[string]specEntry[V]) { delete(m, table) })
	}
	return e.v, ok
}

// drop removes a table found missing. Unlike Forget it leaves gen alone,
// so that a lookup of a missing table does not keep other tables' specs,
// read meanwhile, from being remembered.
func (c *SpecCache[V]) drop(table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := (*c.entries.Load())[table]; ok {
		c.update(func(m map[string]specEntry[V]) { delete(m, table) })
	}
}

// update replaces the map with a copy changed by fn. Callers hold mu.
func (c *SpecCache[V]) update(fn func(map[string]specEntry[V])) {
	old := *c.entries.Load()
	m := make(map[string]specEntry[V], len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	fn(m)
	c.entries.Store(&m)
}

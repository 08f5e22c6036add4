package kit

import (
	"context"
	"errors"
	"sync"
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
// safe for concurrent use.
type SpecCache[V any] struct {
	src    store.Catalog
	ttl    time.Duration
	now    func() time.Time
	derive func(*store.TableSpec) V

	mu sync.RWMutex
	// gen counts Forget calls, so that a spec read before a Forget is not
	// remembered after it.
	gen     uint64
	entries map[string]specEntry[V]
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
	return &SpecCache[V]{src: src, ttl: ttl, now: now, derive: derive, entries: map[string]specEntry[V]{}}
}

// Get returns what was derived from the table's spec, read again once ttl
// has passed; an error wrapping store.ErrTableNotFound when the table is
// missing.
func (c *SpecCache[V]) Get(ctx context.Context, table string) (V, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[table]
	c.mu.RUnlock()
	if age := now.Sub(e.fetched); ok && age < c.ttl && age >= 0 {
		return e.v, nil
	}
	return c.Refresh(ctx, table)
}

// Refresh reads the table's spec again, as Get does once ttl has passed:
// for a caller whose cached spec turned out stale.
func (c *SpecCache[V]) Refresh(ctx context.Context, table string) (V, error) {
	c.mu.RLock()
	gen := c.gen
	c.mu.RUnlock()
	spec, err := c.src.Spec(ctx, table)
	if err != nil {
		if errors.Is(err, store.ErrTableNotFound) {
			c.Forget(table)
		}
		var zero V
		return zero, err
	}
	v := c.derive(&spec)
	c.mu.Lock()
	if c.gen == gen {
		c.entries[table] = specEntry[V]{v: v, fetched: c.now()}
	}
	c.mu.Unlock()
	return v, nil
}

// Forget drops what is remembered of a table and returns it, if anything
// was: the decorator calls it around a CreateTable or DropTable of its own.
func (c *SpecCache[V]) Forget(table string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	e, ok := c.entries[table]
	delete(c.entries, table)
	return e.v, ok
}

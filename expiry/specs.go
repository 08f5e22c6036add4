package expiry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
)

// specCache remembers table specs, which both the write path (to resolve
// default TTLs) and the sweeper (to decode keys) need, for ttl. Changes made
// through the decorator invalidate it at once; a drop and re-create by
// another process is seen within ttl.
type specCache struct {
	inner store.Store
	now   func() time.Time
	ttl   time.Duration

	mu    sync.RWMutex
	specs map[string]cachedSpec
}

type cachedSpec struct {
	spec    *store.TableSpec
	fetched time.Time
}

func newSpecCache(inner store.Store, now func() time.Time, ttl time.Duration) *specCache {
	return &specCache{inner: inner, now: now, ttl: ttl, specs: map[string]cachedSpec{}}
}

// get returns the spec of table, or an error wrapping store.ErrTableNotFound.
// The returned spec must not be modified.
func (c *specCache) get(ctx context.Context, table string) (*store.TableSpec, error) {
	now := c.now()
	c.mu.RLock()
	cs, ok := c.specs[table]
	c.mu.RUnlock()
	if ok && now.Sub(cs.fetched) < c.ttl && now.Sub(cs.fetched) >= 0 {
		return cs.spec, nil
	}
	return c.refresh(ctx, table)
}

// refresh reads the spec of table from the Store. Missing tables are not
// cached, so that a table created elsewhere is seen at once.
func (c *specCache) refresh(ctx context.Context, table string) (*store.TableSpec, error) {
	infos, err := c.inner.Tables(ctx, table)
	if err != nil {
		return nil, fmt.Errorf("expiry: look up table %s: %w", table, err)
	}
	for _, info := range infos {
		if info.Spec.Name == table {
			spec := info.Spec
			c.mu.Lock()
			c.specs[table] = cachedSpec{spec: &spec, fetched: c.now()}
			c.mu.Unlock()
			return &spec, nil
		}
	}
	c.forget(table)
	return nil, fmt.Errorf("expiry: %w: %s", store.ErrTableNotFound, table)
}

func (c *specCache) forget(table string) {
	c.mu.Lock()
	delete(c.specs, table)
	c.mu.Unlock()
}

package remote

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Tables caches, by table name, what a backend derives from a table's
// catalog entry (its spec, and the backend's own names for it), so that an
// operation reads the catalog only on a miss. A table the service reports
// gone is evicted (Err), so the next operation reads the catalog again and
// a table dropped by another process is not served from memory. It is
// safe for concurrent use.
type Tables[T any] struct {
	core   *Core
	load   func(ctx context.Context, name string) (T, error)
	mapErr func(ctx context.Context, op string, err error) error

	mu sync.Mutex
	m  map[string]T
}

// NewTables returns an empty cache of the tables core accepts (Valid).
// load reads a table's catalog entry, store.ErrTableNotFound when there
// is none; mapErr is the backend's mapping of its service's errors onto
// the store sentinels.
func NewTables[T any](core *Core, load func(ctx context.Context, name string) (T, error),
	mapErr func(ctx context.Context, op string, err error) error) *Tables[T] {
	return &Tables[T]{core: core, load: load, mapErr: mapErr, m: map[string]T{}}
}

// Lookup returns a table's cached entry, loading it on a miss; a name that
// cannot be a table is store.ErrTableNotFound without a read.
func (t *Tables[T]) Lookup(ctx context.Context, name string) (T, error) {
	t.mu.Lock()
	v, ok := t.m[name]
	t.mu.Unlock()
	if ok {
		return v, nil
	}
	if !t.core.Valid(name) {
		var zero T
		return zero, store.Errorf(store.ErrTableNotFound, "%q", name)
	}
	v, err := t.load(ctx, name)
	if err != nil {
		return v, err
	}
	t.Put(name, v)
	return v, nil
}

// Put caches a table's entry, as CreateTable knows it.
func (t *Tables[T]) Put(name string, v T) {
	t.mu.Lock()
	t.m[name] = v
	t.mu.Unlock()
}

// Forget drops a table from the cache.
func (t *Tables[T]) Forget(name string) {
	t.mu.Lock()
	delete(t.m, name)
	t.mu.Unlock()
}

// Err maps an error from operation op on table name with the backend's
// mapping ("op name: ..."), and forgets the table when the error says it
// is gone.
func (t *Tables[T]) Err(ctx context.Context, name, op string, err error) error {
	err = t.mapErr(ctx, op+" "+name, err)
	if errors.Is(err, store.ErrTableNotFound) {
		t.Forget(name)
	}
	return err
}

// Begin starts a data operation on table name (Core.Begin) and returns
// the table's cached entry, loading it on a miss (Lookup). cancel is nil
// when err is not; otherwise the caller must call it.
func (t *Tables[T]) Begin(ctx context.Context, name string) (_ context.Context, cancel context.CancelFunc, v T, err error) {
	ctx, cancel, err = t.core.Begin(ctx)
	if err != nil {
		return ctx, nil, v, err
	}
	if v, err = t.Lookup(ctx, name); err != nil {
		cancel()
		return ctx, nil, v, err
	}
	return ctx, cancel, v, nil
}

// Entry is what a backend caches of a table that has a spec.
type Entry interface {
	// TableSpec returns the table's spec, as its catalog entry says.
	TableSpec() store.TableSpec
}

// Spec is every remote backend's Catalog.Spec: the table's spec from the
// cache, reading the catalog on a miss.
func Spec[T Entry](ctx context.Context, t *Tables[T], name string) (store.TableSpec, error) {
	_, cancel, v, err := t.Begin(ctx, name)
	if err != nil {
		return store.TableSpec{}, err
	}
	defer cancel()
	return v.TableSpec(), nil
}

// Resolve is how every remote backend's Write starts once begun: the
// table's cached entry, and the batch validated and resolved against its
// spec at now (kit.ResolveBatch, with maxRowBytes).
func Resolve[T Entry](ctx context.Context, t *Tables[T], name string, batch []store.Mutation, now time.Time, maxRowBytes int) (v T, rs []kit.ResolvedMutation, err error) {
	if v, err = t.Lookup(ctx, name); err != nil {
		return v, nil, err
	}
	spec := v.TableSpec()
	rs, err = kit.ResolveBatch(&spec, batch, now, maxRowBytes)
	return v, rs, err
}

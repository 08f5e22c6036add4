package remote

import (
	"context"
	"errors"
	"sync"

	"github.com/ebb-data/ebb/store"
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

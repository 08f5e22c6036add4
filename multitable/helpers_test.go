package multitable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// backend is what the suite runs on: a factory of fresh, empty Stores
// reading the given clock, and Registry options to test with.
type backend struct {
	open func(t testing.TB, now func() time.Time) store.Store
	// readParallelism, when set, overrides the Registry's default.
	readParallelism int
	// separate writes a put's entry and item apart even where the store
	// takes a guarded batch, as on DynamoDB and CQL.
	separate bool
}

// t0 is where test clocks start.
var t0 = storetest.Epoch

// env is one test's world: a real Store behind a counting wrapper, its
// clock, and a Registry over it.
type env struct {
	t     testing.TB
	ctx   context.Context
	clock *storetest.Clock
	raw   store.Store
	cnt   *countingStore
	reg   *Registry
}

func newEnv(t testing.TB, b backend) *env {
	t.Helper()
	clock := storetest.NewClock(t0)
	raw := b.open(t, clock.Now)
	e := &env{t: t, ctx: context.Background(), clock: clock, raw: raw, cnt: &countingStore{Store: raw}}
	reg, err := New(e.ctx, e.cnt, Options{Now: clock.Now, ReadParallelism: b.readParallelism})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	reg.guarded = reg.guarded && !b.separate
	e.reg = reg
	return e
}

func (e *env) create(name string, ttl time.Duration) {
	e.t.Helper()
	if _, _, err := e.reg.CreateTable(e.ctx, name, Config{DefaultTTL: ttl}); err != nil {
		e.t.Fatalf("CreateTable %q: %v", name, err)
	}
}

func ttlp(d time.Duration) *time.Duration { return &d }

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

func (e *env) put(table, key string, ts time.Time, attrs string, ttl *time.Duration) Item {
	e.t.Helper()
	it, err := e.reg.Put(e.ctx, table, PutItem{Key: key, Timestamp: ts, Attributes: json.RawMessage(attrs), TTL: ttl})
	if err != nil {
		e.t.Fatalf("Put %s/%q: %v", table, key, err)
	}
	return it
}

func (e *env) get(table, key string) (Item, bool) {
	e.t.Helper()
	it, err := e.reg.Get(e.ctx, table, key)
	if errors.Is(err, ErrNoItem) {
		return Item{}, false
	}
	if err != nil {
		e.t.Fatalf("Get %s/%q: %v", table, key, err)
	}
	return it, true
}

// listAll pages through a table with the given page size and returns the
// items in order, failing on a repeated or out-of-order item.
func (e *env) listAll(table string, after *time.Time, pageSize int) []Item {
	e.t.Helper()
	var out []Item
	q := ListQuery{After: after, Limit: pageSize}
	for pages := 0; ; pages++ {
		if pages > 100000 {
			e.t.Fatalf("listing %s does not end", table)
		}
		page, err := e.reg.List(e.ctx, table, q)
		if err != nil {
			e.t.Fatalf("List %s: %v", table, err)
		}
		if len(page.Items) > pageSize {
			e.t.Fatalf("page of %d items, limit %d", len(page.Items), pageSize)
		}
		if page.NextPageToken != "" && len(page.Items) != pageSize {
			e.t.Fatalf("short page (%d of %d) with a next page token", len(page.Items), pageSize)
		}
		out = append(out, page.Items...)
		if page.NextPageToken == "" {
			break
		}
		q.PageToken = page.NextPageToken
	}
	for i := 1; i < len(out); i++ {
		if !less(out[i-1], out[i]) {
			e.t.Fatalf("items %d and %d out of order: (%s, %q) then (%s, %q)", i-1, i,
				out[i-1].Timestamp, out[i-1].Key, out[i].Timestamp, out[i].Key)
		}
	}
	return out
}

func less(a, b Item) bool {
	if !a.Timestamp.Equal(b.Timestamp) {
		return a.Timestamp.Before(b.Timestamp)
	}
	return a.Key < b.Key
}

func keys(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Key
	}
	return out
}

// rawRows counts the rows of ItemsTable physically present in the store,
// expired ones included.
func (e *env) rawRows() int64 {
	e.t.Helper()
	st, err := e.raw.Stats(e.ctx, ItemsTable)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	return st.Rows
}

// countingStore counts the calls made to a real Store, so tests can show
// what an operation costs, and lets a test run code just before a Write
// (to stage a race at an exact point).
type countingStore struct {
	store.Store
	writes, gets, queries atomic.Int64

	mu        sync.Mutex
	writeHook func(batch []store.Mutation) error
}

func (c *countingStore) Write(ctx context.Context, table string, batch []store.Mutation) error {
	c.writes.Add(1)
	c.mu.Lock()
	h := c.writeHook
	c.mu.Unlock()
	if h != nil && table == ItemsTable {
		if err := h(batch); err != nil {
			return err
		}
	}
	return c.Store.Write(ctx, table, batch)
}

func (c *countingStore) Get(ctx context.Context, table string, p, ck []any) (store.Row, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, table, p, ck)
}

func (c *countingStore) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	c.queries.Add(1)
	return c.Store.Scan(ctx, table, q, fn)
}

func (c *countingStore) setHook(h func(batch []store.Mutation) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeHook = h
}

// reads returns the store reads made so far.
func (c *countingStore) reads() int64 { return c.gets.Load() + c.queries.Load() }

func attrsOf(i int) string { return fmt.Sprintf(`{"n":%d}`, i) }

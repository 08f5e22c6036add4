package expiry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ebb-data/ebb/internal/loop"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/storetest"
)

// countingStore wraps a real backend, counts the operations that reach it
// and lets a test fail or delay chosen Writes (to simulate a crash between
// the index write and the row write, throttling, or a slow backend).
type countingStore struct {
	store.Store

	writes, mutations, queries, gets, lookups, others atomic.Int64
	byKind                                            [4]atomic.Int64
	byTable                                           sync.Map // table -> *atomic.Int64 (mutations)

	mu sync.Mutex
	// hook, when set, runs before each Write reaches the backend; a
	// non-nil error is returned without writing.
	hook func(table string, batch []store.Mutation) error
	// after, when set, runs after each Write returns.
	after func(table string, batch []store.Mutation, err error)
}

func newCounting(s store.Store) *countingStore { return &countingStore{Store: s} }

func (c *countingStore) setHook(h func(table string, batch []store.Mutation) error) {
	c.mu.Lock()
	c.hook = h
	c.mu.Unlock()
}

func (c *countingStore) Write(ctx context.Context, table string, batch []store.Mutation) error {
	c.mu.Lock()
	h := c.hook
	c.mu.Unlock()
	if h != nil {
		if err := h(table, batch); err != nil {
			return err
		}
	}
	c.writes.Add(1)
	c.mutations.Add(int64(len(batch)))
	for _, m := range batch {
		c.byKind[m.Kind].Add(1)
	}
	n := int64(0)
	for _, m := range batch {
		if !IsDueMarker(m) {
			n++
		}
	}
	v, _ := c.byTable.LoadOrStore(table, new(atomic.Int64))
	v.(*atomic.Int64).Add(n)
	err := c.Store.Write(ctx, table, batch)
	if c.after != nil {
		c.after(table, batch, err)
	}
	return err
}

func (c *countingStore) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	c.queries.Add(1)
	return c.Store.Scan(ctx, table, q, fn)
}

func (c *countingStore) Get(ctx context.Context, table string, p, ck []any) (store.Row, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, table, p, ck)
}

func (c *countingStore) Spec(ctx context.Context, name string) (store.TableSpec, error) {
	c.lookups.Add(1)
	return c.Store.Spec(ctx, name)
}

func (c *countingStore) QueryIndex(ctx context.Context, table, index string, p []any, v any) ([][]any, error) {
	c.others.Add(1)
	return c.Store.QueryIndex(ctx, table, index, p, v)
}

func (c *countingStore) DeletePartition(ctx context.Context, table string, p []any) error {
	c.others.Add(1)
	return c.Store.DeletePartition(ctx, table, p)
}

func (c *countingStore) tableMutations(table string) int64 {
	v, ok := c.byTable.Load(table)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// opsSnapshot is a copy of the counters, for per-phase figures.
type opsSnapshot struct {
	writes, mutations, queries, gets, lookups, others int64
	deletes                                           int64 // DeleteIfExpired mutations
	indexMuts                                         int64 // mutations of IndexTable
}

func (c *countingStore) snapshot() opsSnapshot {
	return opsSnapshot{
		writes: c.writes.Load(), mutations: c.mutations.Load(), queries: c.queries.Load(),
		gets: c.gets.Load(), lookups: c.lookups.Load(), others: c.others.Load(),
		deletes:   c.byKind[store.DeleteIfExpired].Load(),
		indexMuts: c.tableMutations(IndexTable),
	}
}

func (a opsSnapshot) sub(b opsSnapshot) opsSnapshot {
	return opsSnapshot{
		writes: a.writes - b.writes, mutations: a.mutations - b.mutations, queries: a.queries - b.queries,
		gets: a.gets - b.gets, lookups: a.lookups - b.lookups, others: a.others - b.others,
		deletes: a.deletes - b.deletes, indexMuts: a.indexMuts - b.indexMuts,
	}
}

func (a opsSnapshot) calls() int64 { return a.writes + a.queries + a.gets + a.lookups + a.others }

func (a opsSnapshot) String() string {
	return fmt.Sprintf("%d calls (%d writes carrying %d mutations, %d queries, %d gets, %d table lookups)",
		a.calls(), a.writes, a.mutations, a.queries, a.gets, a.lookups)
}

// Test schema: one text partition key, one int64 clustering key, two value
// columns.
var itemsSpec = store.TableSpec{
	Name:         "items",
	PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "k", Type: store.TypeInt64}},
	Values: []store.Column{
		{Name: "v", Type: store.TypeBytes},
		{Name: "w", Type: store.TypeText},
	},
}

// start is where test clocks start: deliberately not on a window boundary.
var start = storetest.Epoch.Add(250 * time.Millisecond)

// env is one test's world: a real backend (raw), the counting wrapper over
// it, the decorator over that, and the clock all of them read.
type env struct {
	t     testing.TB
	ctx   context.Context
	clock *storetest.Clock
	raw   store.Store
	cnt   *countingStore
	st    *Store
	opts  Options
}

func newEnv(t testing.TB, f storetest.Factory, opts Options) *env {
	t.Helper()
	clock := storetest.NewClock(start)
	raw := f(t, clock.Now)
	e := &env{t: t, ctx: context.Background(), clock: clock, raw: raw, cnt: newCounting(raw), opts: opts}
	e.wrap()
	if err := e.st.CreateTable(e.ctx, itemsSpec); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return e
}

// wrap (re)creates the decorator over the same backend, as a restarted
// process would.
func (e *env) wrap() {
	e.t.Helper()
	opts := e.opts
	opts.Now = e.clock.Now
	st, err := Wrap(e.ctx, e.cnt, opts)
	if err != nil {
		e.t.Fatalf("Wrap: %v", err)
	}
	e.st = st
}

func at(d time.Duration) time.Time { return start.Add(d) }

func key(p string, k int64) ([]any, []any) { return []any{p}, []any{k} }

// item builds an upsert of items (p, k) expiring at exp (zero: none of its
// own).
func item(p string, k int64, exp time.Time) store.Mutation {
	return store.Mutation{
		Partition: []any{p}, Clustering: []any{k}, ExpiresAt: exp,
		Cells: []store.Cell{{Column: "v", Value: []byte(fmt.Sprintf("%s/%d", p, k))}, {Column: "w", Value: "x"}},
	}
}

func (e *env) write(table string, batch ...store.Mutation) {
	e.t.Helper()
	if err := e.st.Write(e.ctx, table, batch); err != nil {
		e.t.Fatalf("Write %s: %v", table, err)
	}
}

// sweep runs one pass at the clock's current time.
func (e *env) sweep() Result {
	e.t.Helper()
	res, err := e.st.Sweeper().SweepOnce(e.ctx, e.clock.Now())
	if err != nil {
		e.t.Fatalf("SweepOnce at %s: %v", e.clock.Now().Format(time.RFC3339Nano), err)
	}
	return res
}

// present returns the clustering keys of the rows physically stored in the
// given partitions of table, expired or not: it reads with the clock moved
// back before any expiry, which every backend supports, then restores it.
// Nothing else may use the store meanwhile.
func (e *env) present(table string, partitions ...string) map[string][]int64 {
	e.t.Helper()
	saved := e.clock.Now()
	e.clock.Set(time.Unix(1, 0))
	defer e.clock.Set(saved)
	out := map[string][]int64{}
	for _, p := range partitions {
		q := store.Query{Partition: []any{p}, Limit: store.MaxLimit}
		for {
			page, err := kit.Query(e.ctx, e.raw, table, q)
			if err != nil {
				e.t.Fatalf("Query %s %s: %v", table, p, err)
			}
			for _, r := range page.Rows {
				out[p] = append(out[p], r.Clustering[0].(int64))
			}
			if page.NextPageToken == nil {
				break
			}
			q.PageToken = page.NextPageToken
		}
	}
	return out
}

func (e *env) countPresent(table string, partitions ...string) int {
	n := 0
	for _, ks := range e.present(table, partitions...) {
		n += len(ks)
	}
	return n
}

// indexEntries returns the index entries of the windows covering
// [from, to], whatever their due time.
func (e *env) indexEntries(from, to time.Time) []entry {
	e.t.Helper()
	l := e.st.layout
	var out []entry
	for w := l.windowOf(from.UnixMilli()); w <= l.windowOf(to.UnixMilli()); w += l.windowMs {
		for shard := range l.shards {
			q := store.Query{Partition: []any{w, shard}, Limit: store.MaxLimit}
			for {
				page, err := kit.Query(e.ctx, e.raw, IndexTable, q)
				if err != nil {
					e.t.Fatalf("Query %s: %v", IndexTable, err)
				}
				for _, r := range page.Rows {
					en, err := entryFromRow(w, shard, r)
					if err != nil {
						e.t.Fatalf("index row %v: %v", r, err)
					}
					out = append(out, en)
				}
				if page.NextPageToken == nil {
					break
				}
				q.PageToken = page.NextPageToken
			}
		}
	}
	return out
}

// mustLive checks that a row is readable.
func (e *env) mustLive(table, p string, k int64) {
	e.t.Helper()
	pk, ck := key(p, k)
	if _, err := e.st.Get(e.ctx, table, pk, ck); err != nil {
		e.t.Fatalf("Get %s %s/%d at %s: %v, want a live row", table, p, k, e.clock.Now().Format(time.RFC3339Nano), err)
	}
}

func isErr(err, target error) bool { return errors.Is(err, target) }

func asMutationError(err error, target **store.MutationError) bool { return errors.As(err, target) }

// value reads a single-metric counter or gauge.
func value(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	close(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("not a counter or gauge: %v", &m)
	return 0
}

// families returns the names of the metric families g gathers.
func families(t testing.TB, g prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		out = append(out, mf.GetName())
	}
	return out
}

// histogramCount returns the sample count of a histogram gathered from g.
func histogramCount(t testing.TB, g prometheus.Gatherer, name string) uint64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("histogram %s not gathered", name)
	return 0
}

// startSweeper runs st's sweeper passes in the background when its Next
// says and at once on its Wake, as ebb.DB's sweeper role does (with the
// same loop), until
// the returned stop is called or the test ends.
func startSweeper(t testing.TB, st *Store) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sw := st.Sweeper()
		_ = loop.Run(ctx, loop.Options{Interval: st.opts.SweepInterval, Next: sw.Next, Trigger: sw.Wake()}, sw.Pass)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// Package storetest is the conformance suite every store.Store backend
// runs: one set of tests, so that an application behaves the same on the
// embedded Pebble backend, on DynamoDB and on CQL.
//
// A backend's test calls Run with a Factory:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t testing.TB, now func() time.Time) store.Store {
//			s, err := pebble.Open(t.TempDir(), pebble.Options{Now: now})
//			...
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Every test drives expiry with its own Clock, creates its own tables under
// names unique within the process (so remote backends may share one
// endpoint), and keeps its round trips few, batching writes, because the
// suite also runs against remote emulators.
//
// The suite checks the invariants of the store contract: read-resolved
// expiry exact to the millisecond, ordering and paging, bad input refused
// with a typed error and nothing written, concurrent writers losing nothing,
// and dropped tables gone for good. A property test (pgregory.net/rapid)
// compares random operation sequences against an in-memory model; its
// number of runs follows -rapid.checks (or RAPID_CHECKS).
package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Factory returns a fresh, empty Store whose clock is now. It registers the
// Store's cleanup (Close, and for remote backends dropping what the test
// created) on t. Close may also be called by the suite; it must be safe to
// call twice.
type Factory func(t testing.TB, now func() time.Time) store.Store

// Of is the Factory of a backend's test package whose opener returns its
// own Store type.
func Of[S store.Store](open func(t testing.TB, now func() time.Time) S) Factory {
	return func(t testing.TB, now func() time.Time) store.Store { return open(t, now) }
}

// Epoch is where every test's Clock starts: millisecond aligned, after 1970,
// and fixed so that failures reproduce.
var Epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type testCase struct {
	name string
	fn   func(e *env)
}

type group struct {
	name  string
	cases []testCase
}

// Run runs the conformance suite against the Stores f returns. Each subtest
// gets its own Store and Clock, so the subtests run in parallel (up to go
// test's -parallel at once): on a remote backend most of a subtest is
// round trips and the creation and drop of its tables, which overlap.
func Run(t *testing.T, f Factory) {
	groups := []group{
		{"Tables", tableCases},
		{"Mutations", mutationCases},
		{"Conditions", conditionCases},
		{"Expiry", expiryCases},
		{"Query", queryCases},
		{"Index", indexCases},
		{"Partitions", partitionCases},
		{"Invalid", invalidCases},
		{"Concurrency", concurrencyCases},
		{"Property", propertyCases},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.fn(newEnv(t, f))
				})
			}
		})
	}
}

// env is one subtest's world: a Store, its Clock and shortcuts that fail
// the test on unexpected errors.
type env struct {
	t    *testing.T
	ctx  context.Context
	s    store.Store
	clk  *Clock
	caps store.Capabilities
}

func newEnv(t *testing.T, f Factory) *env {
	t.Helper()
	clk := NewClock(Epoch)
	s := f(t, clk.Now)
	if s == nil {
		t.Fatal("factory returned a nil Store")
	}
	return &env{t: t, ctx: t.Context(), s: s, clk: clk, caps: s.Capabilities()}
}

// runTag keeps table names of concurrent runs against one remote endpoint
// apart; tableSeq keeps the names of one run apart.
var (
	runTag   = fmt.Sprintf("%04x", rand.Uint32()&0xffff)
	tableSeq atomic.Int64
)

// tableName returns a table name unique within the run, built so that it
// stays within store.MaxNameLen for bases of up to 30 characters.
func tableName(base string) string {
	return fmt.Sprintf("st%s_%d_%s", runTag, tableSeq.Add(1), base)
}

// create names spec uniquely, creates it and returns it.
func (e *env) create(base string, spec store.TableSpec) store.TableSpec {
	e.t.Helper()
	spec.Name = tableName(base)
	if err := e.s.CreateTable(e.ctx, spec); err != nil {
		e.t.Fatalf("CreateTable %s: %v", spec.Name, err)
	}
	return spec
}

// wideSpec is the workhorse schema: a text partition key, an (int64, text)
// clustering key, one value column of each type and indexes on the text and
// bytes columns.
func wideSpec(order store.Order, ttl time.Duration) store.TableSpec {
	return store.TableSpec{
		PartitionKey:    []store.Column{{Name: "p", Type: store.TypeText}},
		Clustering:      []store.Column{{Name: "c1", Type: store.TypeInt64}, {Name: "c2", Type: store.TypeText}},
		ClusteringOrder: order,
		Values: []store.Column{
			{Name: "v", Type: store.TypeText},
			{Name: "n", Type: store.TypeInt64},
			{Name: "b", Type: store.TypeBytes},
			{Name: "ts", Type: store.TypeTimestamp},
		},
		DefaultTTL: ttl,
		Indexes:    []store.IndexSpec{{Name: "by_v", Column: "v"}, {Name: "by_b", Column: "b"}},
	}
}

// Positions of wideSpec's value columns in Row.Values.
const (
	colV = iota
	colN
	colB
	colTS
)

// key builds a wideSpec clustering key.
func key(c1 int64, c2 string) []any { return []any{c1, c2} }

// up builds a wideSpec upsert.
func up(p string, c1 int64, c2 string, cells ...store.Cell) store.Mutation {
	return store.Mutation{Partition: []any{p}, Clustering: key(c1, c2), Cells: cells}
}

func cell(col string, v any) store.Cell { return store.Cell{Column: col, Value: v} }

func (e *env) write(table string, batch ...store.Mutation) {
	e.t.Helper()
	if err := e.s.Write(e.ctx, table, batch); err != nil {
		e.t.Fatalf("Write %s: %v", table, err)
	}
}

func (e *env) get(table string, partition, clustering []any) (store.Row, bool) {
	e.t.Helper()
	row, err := e.s.Get(e.ctx, table, partition, clustering)
	if isErr(err, store.ErrNotFound) {
		return store.Row{}, false
	}
	if err != nil {
		e.t.Fatalf("Get %s %v %v: %v", table, partition, clustering, err)
	}
	return row, true
}

// mustGet returns a row that must be live.
func (e *env) mustGet(table string, partition, clustering []any) store.Row {
	e.t.Helper()
	row, ok := e.get(table, partition, clustering)
	if !ok {
		e.t.Fatalf("Get %s %v %v at %s: not found, want a live row", table, partition, clustering, e.clk.Now().Format(time.RFC3339Nano))
	}
	return row
}

// mustMiss checks that a row is not live, by Get and by Query.
func (e *env) mustMiss(table string, partition, clustering []any) {
	e.t.Helper()
	if row, ok := e.get(table, partition, clustering); ok {
		e.t.Fatalf("Get %s %v %v at %s = %s, want ErrNotFound", table, partition, clustering, e.clk.Now().Format(time.RFC3339Nano), fmtRow(row))
	}
	if len(clustering) == 0 {
		return
	}
	page, err := kit.Query(e.ctx, e.s, table, store.Query{Partition: partition,
		Low:  store.Bound{Values: clustering, Inclusive: true},
		High: store.Bound{Values: clustering, Inclusive: true}, Limit: 10})
	if err != nil {
		e.t.Fatalf("Query %s: %v", table, err)
	}
	if len(page.Rows) != 0 || page.NextPageToken != nil {
		e.t.Fatalf("Query of the missing row %v %v returned %d rows, token %x", partition, clustering, len(page.Rows), page.NextPageToken)
	}
}

// scan pages through a query to the end and returns every row, checking
// the page contract on the way: a page shorter than the limit ends the
// scan, NextPageToken is nil exactly when no live row follows, so a token
// never leads to an empty page.
func (e *env) scan(table string, q store.Query) []store.Row {
	e.t.Helper()
	var out []store.Row
	for pages := 0; ; pages++ {
		page, err := kit.Query(e.ctx, e.s, table, q)
		if err != nil {
			e.t.Fatalf("Query %s page %d: %v", table, pages, err)
		}
		if len(page.Rows) > q.Limit {
			e.t.Fatalf("Query %s page %d: %d rows, limit %d", table, pages, len(page.Rows), q.Limit)
		}
		if pages > 0 && len(page.Rows) == 0 {
			e.t.Fatalf("Query %s: page %d is empty although the previous page returned a token", table, pages)
		}
		out = append(out, page.Rows...)
		if page.NextPageToken == nil {
			return out
		}
		if len(page.Rows) < q.Limit {
			e.t.Fatalf("Query %s page %d: %d rows (limit %d) and a page token; a short page must end the range", table, pages, len(page.Rows), q.Limit)
		}
		if pages > 20000 {
			e.t.Fatalf("Query %s: no end after %d pages", table, pages)
		}
		q.PageToken = page.NextPageToken
	}
}

// all returns every live row of a partition in clustering order.
func (e *env) all(table string, partition ...any) []store.Row {
	e.t.Helper()
	return e.scan(table, store.Query{Partition: partition, Limit: store.MaxLimit})
}

// stats returns the table's Stats and whether they are exact.
func (e *env) stats(table string) (store.TableStats, bool) {
	e.t.Helper()
	st, err := e.s.Stats(e.ctx, table)
	if err != nil {
		e.t.Fatalf("Stats %s: %v", table, err)
	}
	return st, st.Exact
}

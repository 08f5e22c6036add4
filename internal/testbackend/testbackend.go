// Package testbackend opens the store backends that backend-independent
// tests run on: the embedded Pebble backend in memory, DynamoDB at
// EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh starts dynalite and sets
// it) and at EBB_DYNAMODB_LOCAL_ENDPOINT (scripts/with-dynamodb-local.sh
// starts Amazon's DynamoDB Local and sets it). It is for _test files only;
// feature code never picks a backend.
//
// EBB_TEST_BACKENDS (package internal/testselect) chooses which of them
// run: the embedded backend alone by default, so that a plain
// `go test ./...` needs nothing installed, and every one under `make test`.
// An unselected backend's subtests are skipped and say so. A selected
// remote backend without its endpoint fails the test rather than skipping
// it, so that a run which did not cover it cannot pass for one that did.
package testbackend

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql/cqltest"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/store/storetest"
)

// Factory opens a fresh, empty Store whose read-resolved expiry follows now
// (nil: time.Now). The test's cleanup closes it.
type Factory = storetest.Factory

// Named is a Factory with the name its subtests run under and the name
// EBB_TEST_BACKENDS selects it by.
type Named struct {
	Name    string
	Backend string
	Open    Factory
}

// Pebble opens the embedded backend on an in-memory file system without
// syncing: the tests that use it check behaviour, not durability. A nil now
// means time.Now, which inside a testing/synctest bubble is the bubble's
// fake clock. The Store is closed when the test ends. Like the remote
// backends, it skips the test unless EBB_TEST_BACKENDS selects pebble (the
// default does), so that a run of one remote backend's variants (make
// test-cql, make cluster-run) runs those alone.
func Pebble(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	testselect.Need(t, testselect.Pebble)
	st, err := ebbpebble.Open("db", ebbpebble.Options{FS: vfs.NewMem(), NoSync: true, Now: now})
	if err != nil {
		t.Fatalf("open pebble: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Dynamo opens the DynamoDB backend at EBB_DYNAMODB_ENDPOINT with a table
// prefix of its own, and drops its tables when the test ends. It skips the
// test unless dynalite is selected, and fails it when dynalite is selected
// but no endpoint is configured.
func Dynamo(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	return dynamotest.New(t, now)
}

// DynamoDBLocal opens the DynamoDB backend on Amazon's DynamoDB Local at
// EBB_DYNAMODB_LOCAL_ENDPOINT (scripts/with-dynamodb-local.sh starts it and
// sets it), where batches go through TransactWriteItems. Like Dynamo, it
// skips the test unless dynamodb-local is selected, and fails it when
// dynamodb-local is selected but no endpoint is configured.
func DynamoDBLocal(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	return dynamotest.DynamoDBLocal.New(t, now)
}

// CQL opens the CQL backend at EBB_CQL_HOSTS (scripts/with-cassandra.sh
// starts Apache Cassandra and sets it), in a keyspace of its own. Like
// Dynamo, it skips the test unless cql is selected, and fails it when cql
// is selected but no hosts are configured.
func CQL(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	return cqltest.New(t, now)
}

// All returns every backend of the suites, selected or not, in the order
// subtests run: every one a selection names but the three-node cluster
// (testselect.CQLCluster), which has tests of its own.
func All() []Named {
	return []Named{
		{Name: "pebble", Backend: testselect.Pebble, Open: Pebble},
		{Name: "dynamodb", Backend: testselect.Dynalite, Open: Dynamo},
		{Name: "dynamodb-local", Backend: testselect.DynamoDBLocal, Open: DynamoDBLocal},
		{Name: "cql", Backend: testselect.CQL, Open: CQL},
	}
}

// Each runs fn once per backend, as a subtest named after it; the subtests
// of backends EBB_TEST_BACKENDS leaves out are skipped.
func Each(t *testing.T, fn func(t *testing.T, open Factory)) {
	t.Helper()
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) {
			testselect.Need(t, b.Backend)
			fn(t, b.Open)
		})
	}
}

// EachParallel is Each with the backends' subtests run in parallel with
// one another (and with the other parallel tests), for a fn that keeps
// nothing but its own store between backends: the remote variants spend
// most of their time waiting on their servers, so their round trips
// overlap instead of adding up. A selected backend still runs and an
// unselected one is still skipped, exactly as under Each.
func EachParallel(t *testing.T, fn func(t *testing.T, open Factory)) {
	t.Helper()
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) {
			testselect.Need(t, b.Backend)
			t.Parallel()
			fn(t, b.Open)
		})
	}
}

package shardmgr

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
)

// opener returns a fresh, empty Store whose read-resolved expiry follows
// now (nil: time.Now). The test's cleanup closes it and drops its tables.
type opener func(t testing.TB, now func() time.Time) store.Store

// backends are the stores the backend-independent tests run on: Pebble in
// memory, and DynamoDB at EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh
// starts dynalite and sets it). Without the endpoint the DynamoDB subtests
// fail rather than skip, so that a run which did not cover DynamoDB cannot
// pass for one that did.
var backends = []struct {
	name string
	open opener
}{
	{"pebble", func(t testing.TB, now func() time.Time) store.Store { return openStore(t, now) }},
	{"dynamodb", func(t testing.TB, now func() time.Time) store.Store { return dynamotest.New(t, now) }},
}

// forEachBackend runs test once per backend, as a subtest named after it.
func forEachBackend(t *testing.T, test func(t *testing.T, open opener)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b.open) })
	}
}

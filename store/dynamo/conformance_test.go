package dynamo_test

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformance runs the shared store suite against the endpoint in
// EBB_DYNAMODB_ENDPOINT; each subtest gets a Store with a table prefix of its
// own, whose tables are dropped when the subtest ends.
func TestConformance(t *testing.T) {
	dynamotest.Require(t)
	storetest.Run(t, func(t testing.TB, now func() time.Time) store.Store {
		return dynamotest.New(t, now)
	})
}

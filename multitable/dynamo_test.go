package multitable

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
)

// TestDynamo runs the behaviour suite on the DynamoDB backend against the
// endpoint in EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh starts
// dynalite and sets it). It fails, never skips, when none is configured.
func TestDynamo(t *testing.T) {
	dynamotest.Require(t)
	runSuite(t, backend{open: func(t testing.TB, now func() time.Time) store.Store {
		return dynamotest.New(t, now)
	}})
}

package multitable

import (
	"testing"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
)

// TestDynamo runs the behaviour suite on the DynamoDB backend against the
// endpoint in EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh starts
// dynalite and sets it) when EBB_TEST_BACKENDS selects dynalite, and then
// fails, never skips, when none is configured. The remote variants (this
// one, TestDynamoDBLocal and TestCQL) run in parallel: each waits on a
// server of its own, so their round trips overlap instead of adding up.
func TestDynamo(t *testing.T) {
	t.Parallel()
	dynamotest.Require(t)
	runSuite(t, backend{open: testbackend.Dynamo})
}

// TestDynamoDBLocal runs the suite on Amazon's DynamoDB Local at
// EBB_DYNAMODB_LOCAL_ENDPOINT (scripts/with-dynamodb-local.sh) when
// selected, and then fails, never skips, when none is configured.
func TestDynamoDBLocal(t *testing.T) {
	t.Parallel()
	dynamotest.DynamoDBLocal.Require(t)
	runSuite(t, backend{open: testbackend.DynamoDBLocal})
}

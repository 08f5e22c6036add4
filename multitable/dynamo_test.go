package multitable

import (
	"testing"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
)

// TestDynamo runs the behaviour suite on the DynamoDB backend against the
// endpoint in EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh starts
// dynalite and sets it) when EBB_TEST_BACKENDS selects dynalite, and then
// fails, never skips, when none is configured.
func TestDynamo(t *testing.T) {
	dynamotest.Require(t)
	runSuite(t, backend{open: testbackend.Dynamo})
}

// TestDynamoDBLocal runs the suite on Amazon's DynamoDB Local at
// EBB_DYNAMODB_LOCAL_ENDPOINT (scripts/with-dynamodb-local.sh) when
// selected, and then fails, never skips, when none is configured.
func TestDynamoDBLocal(t *testing.T) {
	dynamotest.DynamoDBLocal.Require(t)
	runSuite(t, backend{open: testbackend.DynamoDBLocal})
}

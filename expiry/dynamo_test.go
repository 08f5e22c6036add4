package expiry

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
)

// TestDynamo runs the expiry suite on the DynamoDB backend at
// EBB_DYNAMODB_ENDPOINT (dynalite under `make test`) when EBB_TEST_BACKENDS
// selects dynalite, and then fails, never skips, when no endpoint is
// configured. Counts are scaled to an emulator: 2,000
// rows expire in the same second (100,000 on the embedded backend), and the
// downtime caught up on is 10 minutes of 5 s windows over 4 shards, since
// every window costs one query per shard. The remote variants (this one,
// TestDynamoDBLocal and TestCQL) run in parallel: each waits on a server of
// its own, so their round trips overlap instead of adding up.
func TestDynamo(t *testing.T) {
	t.Parallel()
	dynamotest.Require(t)
	runSuite(t, testbackend.Dynamo, suiteConfig{
		massRows: 2000,
		downtime: 10 * time.Minute,
		catchUp:  Options{Window: 5 * time.Second, Shards: 4},
	})
}

// TestDynamoDBLocal runs the same suite on Amazon's DynamoDB Local at
// EBB_DYNAMODB_LOCAL_ENDPOINT, where the backend writes batches with
// TransactWriteItems. Once selected, it fails, never skips, without the
// endpoint.
func TestDynamoDBLocal(t *testing.T) {
	t.Parallel()
	dynamotest.DynamoDBLocal.Require(t)
	runSuite(t, testbackend.DynamoDBLocal, suiteConfig{
		massRows: 2000,
		downtime: 10 * time.Minute,
		catchUp:  Options{Window: 5 * time.Second, Shards: 4},
	})
}

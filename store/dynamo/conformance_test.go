package dynamo_test

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformance runs the shared store suite against the endpoint in
// EBB_DYNAMODB_ENDPOINT (dynalite under `make test`: no transactions, no
// TTL process); each subtest gets a Store with a table prefix of its own,
// whose tables are dropped when the subtest ends.
func TestConformance(t *testing.T) {
	dynamotest.Require(t)
	storetest.Run(t, storetest.Of(dynamotest.New))
}

// TestConformanceDynamoDBLocal runs the suite again on Amazon's DynamoDB
// Local in EBB_DYNAMODB_LOCAL_ENDPOINT, which has TransactWriteItems: there
// single-partition batches take the transactional path, so the suite's
// atomicity and concurrency cases cover it. Once EBB_TEST_BACKENDS selects
// it, it fails, never skips, without the endpoint, and also when the
// endpoint turns out to have no transactions, which would leave that path
// untested.
func TestConformanceDynamoDBLocal(t *testing.T) {
	dynamotest.DynamoDBLocal.Require(t)
	if caps := dynamotest.DynamoDBLocal.New(t, time.Now).Capabilities(); !caps.AtomicPartitionBatch || caps.MaxAtomicBatch != 100 {
		t.Fatalf("DynamoDB Local reports AtomicPartitionBatch=%v MaxAtomicBatch=%d, want transactions of 100",
			caps.AtomicPartitionBatch, caps.MaxAtomicBatch)
	}
	storetest.Run(t, storetest.Of(dynamotest.DynamoDBLocal.New))
}

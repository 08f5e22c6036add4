package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// retryPolicy governs the work the SDK cannot retry by itself
// (BatchWriteItem's UnprocessedItems, transaction conflicts): the
// backoff.Policy of remote.Common.RetryPolicy, exponential with full
// jitter, capped, over a bounded number of attempts.
type retryPolicy struct {
	backoff.Policy
	// onRetry, if set, is called before each re-send of unprocessed items.
	onRetry func()
}

// retryBase is the delay before the first retry.
const retryBase = 25 * time.Millisecond

// batchSender sends one BatchWriteItem request and returns what the service
// left unprocessed.
type batchSender func(ctx context.Context, reqs map[string][]types.WriteRequest) (map[string][]types.WriteRequest, error)

// writeBatch sends reqs and re-sends the unprocessed part under the backoff
// policy. When items are still unprocessed after the last attempt, it fails
// with store.ErrThrottled: the service keeps refusing for lack of capacity.
func (b retryPolicy) writeBatch(ctx context.Context, send batchSender, reqs map[string][]types.WriteRequest) error {
	return b.Retry(ctx, func(attempt int) (bool, error) {
		if attempt > 1 && b.onRetry != nil {
			b.onRetry()
		}
		left, err := send(ctx, reqs)
		if err != nil {
			return false, err
		}
		n := countRequests(left)
		if n == 0 {
			return false, nil
		}
		if attempt >= b.Attempts {
			return false, store.Errorf(store.ErrThrottled, "%d writes still unprocessed after %d attempts", n, attempt)
		}
		reqs = left
		return true, nil
	})
}

func countRequests(reqs map[string][]types.WriteRequest) int {
	n := 0
	for _, r := range reqs {
		n += len(r)
	}
	return n
}

package dynamo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// retryPolicy governs the work the SDK cannot retry by itself
// (BatchWriteItem's UnprocessedItems, transaction conflicts): exponential
// with full jitter, capped, over a bounded number of attempts.
type retryPolicy struct {
	base, cap time.Duration
	attempts  int
	// sleep waits for d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter returns a value in [0, n); tests replace it.
	jitter func(n int64) int64
	// onRetry, if set, is called before each re-send.
	onRetry func()
}

// delay is the wait before retry number attempt (1-based): full jitter
// over the capped exponential delay, so that clients throttled together
// spread their re-sends over the whole of it.
func (b retryPolicy) delay(attempt int) time.Duration {
	d := backoff.Exponential(b.base, b.cap, attempt)
	if d <= 0 {
		return 0
	}
	return time.Duration(b.jitter(int64(d)) + 1)
}

func defaultJitter(n int64) int64 { return rand.Int64N(n) }

// batchSender sends one BatchWriteItem request and returns what the service
// left unprocessed.
type batchSender func(ctx context.Context, reqs map[string][]types.WriteRequest) (map[string][]types.WriteRequest, error)

// writeBatch sends reqs and re-sends the unprocessed part under the backoff
// policy. When items are still unprocessed after the last attempt, it fails
// with store.ErrThrottled: the service keeps refusing for lack of capacity.
func (b retryPolicy) writeBatch(ctx context.Context, send batchSender, reqs map[string][]types.WriteRequest) error {
	for attempt := 1; ; attempt++ {
		left, err := send(ctx, reqs)
		if err != nil {
			return err
		}
		n := countRequests(left)
		if n == 0 {
			return nil
		}
		if attempt >= b.attempts {
			return fmt.Errorf("%w: %d writes still unprocessed after %d attempts", store.ErrThrottled, n, attempt)
		}
		if err := b.sleep(ctx, b.delay(attempt)); err != nil {
			return err
		}
		if b.onRetry != nil {
			b.onRetry()
		}
		reqs = left
	}
}

func countRequests(reqs map[string][]types.WriteRequest) int {
	n := 0
	for _, r := range reqs {
		n += len(r)
	}
	return n
}

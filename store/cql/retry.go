package cql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// retryPolicy retries what the cluster refused without doing (overloaded,
// bootstrapping, too few replicas alive) and what timed out where repeating
// is harmless (reads, and writes: every non-conditional write carries an
// explicit timestamp, so sending it again stores exactly the same cells).
// It waits with full jitter over a capped exponential delay, for a bounded
// number of attempts, and never past the operation's context (the
// backoff.Policy of remote.Common.RetryPolicy; its OnRetry counts retries
// by reason). The driver's own retries are off, so this is the only place
// attempts are counted.
type retryPolicy struct{ backoff.Policy }

// retryBase is the delay before the first retry.
const retryBase = 20 * time.Millisecond

// errNoRetry marks an error that must not be retried whatever its kind.
var errNoRetry = errors.New("cql: not retried")

// retryable reports whether an error of kind k may be retried; idempotent
// says whether the request may be applied twice.
func retryable(k errKind, idempotent bool) bool {
	switch k {
	case kindOverloaded, kindUnavailable, kindReadTimeout:
		return true
	case kindWriteTimeout, kindCASUnknown:
		// A conditional write is idempotent where its caller re-checks the
		// outcome (the catalog's IF NOT EXISTS and IF EXISTS, serial
		// reads); a user's compare-and-swap is not.
		return idempotent
	}
	return false
}

// do runs fn until it succeeds, fails in a way not worth retrying, or runs
// out of attempts. Retries left exhausted on an overloaded cluster surface
// as store.ErrThrottled; exhausted timeouts and unavailability, and a wait
// the context cut short, as store.ErrUnavailable (by mapErr). The error is
// not yet mapped otherwise.
func (p retryPolicy) do(ctx context.Context, idempotent bool, fn func(context.Context) error) error {
	var last error
	finished := false
	err := p.Retry(ctx, func(attempt int) (bool, error) {
		err := fn(ctx)
		if err == nil {
			finished = true
			return false, nil
		}
		k := classify(err)
		if !retryable(k, idempotent) || ctx.Err() != nil || errors.Is(err, errNoRetry) {
			finished = true
			return false, err
		}
		if attempt >= p.Attempts {
			finished = true
			if k == kindOverloaded {
				return false, store.Wrapf(store.ErrThrottled, err, "cluster overloaded after %d attempts", attempt)
			}
			return false, store.Wrapf(store.ErrUnavailable, err, "%d attempts", attempt)
		}
		last = err
		return true, err
	})
	if !finished {
		// The context ended during a wait.
		return store.Wrapf(store.ErrUnavailable, fmt.Errorf("%w (after %v)", err, last), "gave up retrying")
	}
	return err
}

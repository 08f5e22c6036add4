package cql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// retryPolicy retries what the cluster refused without doing (overloaded,
// bootstrapping, too few replicas alive) and what timed out where repeating
// is harmless (reads, and writes: every non-conditional write carries an
// explicit timestamp, so sending it again stores exactly the same cells).
// It waits with full jitter over a capped exponential delay, for a bounded
// number of attempts, and never past the operation's context. The driver's
// own retries are off, so this is the only place attempts are counted.
type retryPolicy struct {
	base, cap time.Duration
	attempts  int
	// sleep waits for d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter returns a value in [0, n); tests replace it.
	jitter func(n int64) int64
	// onRetry, if set, is told of each retry and why.
	onRetry func(kind errKind)
}

func defaultJitter(n int64) int64 { return rand.Int64N(n) }

// errNoRetry marks an error that must not be retried whatever its kind.
var errNoRetry = errors.New("cql: not retried")

// delay is the wait before retry number attempt (1-based).
func (p retryPolicy) delay(attempt int) time.Duration {
	d := backoff.Exponential(p.base, p.cap, attempt)
	if d <= 0 {
		return 0
	}
	return time.Duration(p.jitter(int64(d)) + 1)
}

// retryable reports whether an error of kind k may be retried; idempotent
// says whether the request may be applied twice.
func retryable(k errKind, idempotent bool) bool {
	switch k {
	case kindOverloaded, kindUnavailable, kindReadTimeout:
		return true
	case kindWriteTimeout:
		return idempotent
	}
	return false
}

// do runs fn until it succeeds, fails in a way not worth retrying, or runs
// out of attempts. Retries left exhausted on an overloaded cluster surface
// as store.ErrThrottled; exhausted timeouts and unavailability as
// store.ErrUnavailable (by mapErr). The error is not yet mapped otherwise.
func (p retryPolicy) do(ctx context.Context, idempotent bool, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		k := classify(err)
		if !retryable(k, idempotent) || ctx.Err() != nil || errors.Is(err, errNoRetry) {
			return err
		}
		if attempt >= p.attempts {
			if k == kindOverloaded {
				return fmt.Errorf("%w: cluster overloaded after %d attempts: %w", store.ErrThrottled, attempt, err)
			}
			return fmt.Errorf("%w: %d attempts: %w", store.ErrUnavailable, attempt, err)
		}
		if p.onRetry != nil {
			p.onRetry(k)
		}
		if serr := p.sleep(ctx, p.delay(attempt)); serr != nil {
			return fmt.Errorf("%w: %w (after %v)", store.ErrUnavailable, serr, err)
		}
	}
}

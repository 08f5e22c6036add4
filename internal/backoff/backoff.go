// Package backoff holds the retry arithmetic the loops and backends share:
// a capped exponential delay and a wait that gives way to its context.
//
// Jitter stays with each caller, because callers want different kinds: a
// backend re-sending throttled batches spreads its clients over the whole
// delay (full jitter), while a sweeper retrying one call keeps at least
// half of it (equal jitter) so that a throttled backend gets time to
// recover.
package backoff

import (
	"context"
	"time"
)

// Exponential returns the delay before retry number attempt (1-based):
// base for the first, doubling with each further attempt, and never more
// than limit. An attempt below 1 counts as the first. The result is never
// negative: a non-positive base or limit gives 0, and the doubling stops at
// limit, so large attempt numbers cannot overflow.
func Exponential(base, limit time.Duration, attempt int) time.Duration {
	if base <= 0 || limit <= 0 {
		return 0
	}
	d := base
	for i := 1; i < attempt && d < limit; i++ {
		if d > limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// Sleep waits for d or until ctx is done, whichever comes first; it
// returns ctx's error in the second case. A non-positive d does not wait.
// It uses a timer rather than time.Sleep so that a shutdown never waits
// out a long backoff.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Package backoff holds the retry arithmetic and the one retry loop the
// loops and backends share: a capped exponential delay, a wait that gives
// way to its context, and Policy, which bounds the tries and jitters the
// waits.
//
// The kind of jitter is each caller's choice, because callers want
// different kinds: a backend re-sending throttled requests, or writers of
// one key that collided, spread themselves over the whole delay (Full),
// while a sweeper retrying one call keeps at least half of it (Equal) so
// that a throttled backend gets time to recover. What is worth retrying is
// also the caller's: Retry only counts, waits and stops.
package backoff

import (
	"context"
	"math/rand/v2"
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

// Policy is a bounded schedule of retries: the wait after try number n
// (1-based) is Exponential(Base, Max, n), jittered. The zero Jitter and
// Sleep are usable; a Policy is a value, safe to share.
type Policy struct {
	// Base is the delay after the first try; Max caps the doubling.
	Base, Max time.Duration
	// Attempts bounds the tries Retry makes, the first included; below 1
	// means a single try.
	Attempts int
	// Jitter turns a delay into the wait; nil waits the delay itself.
	// Full and Equal are the two kinds in use.
	Jitter func(d time.Duration) time.Duration
	// Sleep waits for d or until ctx is done; nil means Sleep. Tests
	// replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is told of each failed try that Retry is about to
	// wait after and try again, with its error; callers count retries
	// with it.
	OnRetry func(err error)
}

// Delay is the wait after try number attempt (1-based): the capped
// exponential delay, jittered. A non-positive delay is 0.
func (p Policy) Delay(attempt int) time.Duration {
	d := Exponential(p.Base, p.Max, attempt)
	if d <= 0 || p.Jitter == nil {
		return d
	}
	return p.Jitter(d)
}

// Wait waits Delay(attempt), or until ctx is done; it returns ctx's error
// in the second case.
func (p Policy) Wait(ctx context.Context, attempt int) error {
	sleep := p.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	return sleep(ctx, p.Delay(attempt))
}

// Retry calls try with attempt 1, 2, … until try says not to go on (again
// false) or Attempts tries were made, and returns try's last error. After
// each try that wants another and has one left, it calls OnRetry and
// waits; a wait cut short by ctx ends Retry with ctx's error, so a caller
// that words that case itself tells it apart by whether try had finished.
// try decides what is worth retrying; it may also stop early at its last
// attempt to word that error itself.
func (p Policy) Retry(ctx context.Context, try func(attempt int) (again bool, err error)) error {
	for attempt := 1; ; attempt++ {
		again, err := try(attempt)
		if !again || attempt >= p.Attempts {
			return err
		}
		if p.OnRetry != nil {
			p.OnRetry(err)
		}
		if werr := p.Wait(ctx, attempt); werr != nil {
			return werr
		}
	}
}

// Full is full jitter: a wait drawn uniformly from (0, d]. Clients
// throttled together spread their retries over the whole delay, which is
// what a shared backend needs from many of them.
func Full(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d))) + 1
}

// Equal is equal jitter: a wait drawn uniformly from [d/2, d], so that a
// lone caller gives a throttled backend at least half the delay to recover
// and still does not retry in lockstep with another.
func Equal(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

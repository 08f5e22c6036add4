// Package loop runs a background pass over and over: the one loop shape of
// ebb's background work (the shard manager's reconcile passes, the expiry
// sweeper's passes), owned by ebb.DB's roles.
//
// A pass runs at once, then after each wait. A pass that fails or panics
// is logged and retried after a backoff that doubles from the interval
// (never later than a successful pass would wait: Options.Next), so
// that a broken pass never silently stops the loop (a stopped shard
// manager would surface much later as no_shard) and a failing one never
// runs more often than a healthy one.
package loop

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/ebb-data/ebb/internal/backoff"
)

// Options configures Run.
type Options struct {
	// Interval is the wait after a successful pass. Required.
	Interval time.Duration
	// Next, if set, says how long to wait after a successful pass in
	// place of Interval (the shard manager follows its narrowest shard).
	// It also bounds the wait after a failed pass: a schedule that keeps
	// something alive (a runway of shards) must not be stretched by a
	// backoff, and retrying no more often than a healthy pass runs keeps
	// a failing pass from running hot.
	Next func() time.Duration
	// MaxBackoff caps the wait after failed passes; zero means
	// max(Interval, 1 minute).
	MaxBackoff time.Duration
	// Trigger, if set, runs a pass at once when it receives, whatever
	// the wait.
	Trigger <-chan struct{}
	// Logger receives a warning for each failed pass; nil discards.
	Logger *slog.Logger
}

// Run runs pass at once, then after every wait, until ctx is done, and
// then returns nil. A pass runs under ctx. After k failed passes in a row
// the wait is Interval·2^k, at most MaxBackoff and at most Next().
func Run(ctx context.Context, o Options, pass func(context.Context) error) error {
	if o.Interval <= 0 {
		return fmt.Errorf("loop: Interval %s must be positive", o.Interval)
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = max(o.Interval, time.Minute)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-o.Trigger:
		}
		wait := o.Interval
		if err := Safe(ctx, pass); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			wait = backoff.Exponential(o.Interval, o.MaxBackoff, failures+1)
			if o.Next != nil {
				wait = min(wait, o.Next())
			}
			log.Warn("background pass failed", "err", err, "failures", failures, "retry_in", wait)
		} else {
			failures = 0
			if o.Next != nil {
				wait = o.Next()
			}
		}
		// A trigger that fired during the pass is already served.
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// Safe runs pass, turning a panic into an error that carries the stack.
func Safe(ctx context.Context, pass func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return pass(ctx)
}

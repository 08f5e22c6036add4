package expiry

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// Pass runs one pass (SweepOnce) at the Store's clock, and counts and logs
// it. The caller owns the schedule: ebb.DB's sweeper role calls it again
// when Next says and at once on Wake, while it holds its lease.
func (sw *Sweeper) Pass(ctx context.Context) error { return sw.tick(ctx) }

// Next says how long to wait after a pass before the next one: until the
// earliest window known to hold entries, at most IdleInterval (writes
// through other replicas wake nobody), and while the window containing now
// holds entries not yet due, the busy wait (busyWait) after a pass that
// found entries, SweepInterval after one that found none. An index
// without due markers is swept at the same pace.
func (sw *Sweeper) Next() time.Duration {
	o := sw.s.opts
	due := o.SweepInterval
	if b := time.Duration(sw.busy.Load()); b > 0 {
		due = b
	}
	if !sw.s.marked {
		return due
	}
	at := min(sw.next.Load(), sw.woken.Load())
	if at == math.MaxInt64 {
		return o.IdleInterval
	}
	wait := time.Duration(at-o.Now().UnixMilli()) * time.Millisecond
	if wait <= 0 {
		return due
	}
	return min(wait, o.IdleInterval)
}

// busyDivisor bounds how often passes run while rows keep falling due:
// at most one every SweepInterval/busyDivisor. Each pass costs a read of
// the markers and one of each index partition of the current window
// whatever it finds, so passes must not run back to back; but waiting a
// whole interval between passes that find rows leaves the rows that fall
// due meanwhile waiting that long too, so that at a high rate the delete
// lag is an interval plus two passes' worth of deletes.
const busyDivisor = 10

// busyWait is the wait after a pass that found entries entries since the
// pass before, which began covered earlier: about as long as it takes for
// a full delete batch (BatchSize) to fall due at that rate, so that every
// pass's fixed reads are spread over at least a batch of deletes, between
// SweepInterval/busyDivisor and SweepInterval. Zero, for a pass that found
// nothing, means SweepInterval.
func (sw *Sweeper) busyWait(entries int, covered time.Duration) time.Duration {
	o := sw.s.opts
	if entries <= 0 {
		return 0
	}
	covered = max(covered, time.Millisecond)
	wait := time.Duration(float64(covered) * float64(o.BatchSize) / float64(entries))
	return min(max(wait, o.SweepInterval/busyDivisor), o.SweepInterval)
}

// Wake receives when a write through this process marked a window earlier
// than the one the sweeper waits for: the owner of the schedule runs a
// pass then, so that a row due soon is not left to the end of a long
// sleep.
func (sw *Sweeper) Wake() <-chan struct{} { return sw.wake }

func (sw *Sweeper) tick(ctx context.Context) error {
	res, err := sw.SweepOnce(ctx, sw.s.opts.Now())
	if err != nil {
		sw.s.m.sweeps.WithLabelValues("error").Inc()
	} else {
		sw.s.m.sweeps.WithLabelValues("ok").Inc()
	}
	if res.Entries > 0 || res.Windows > 1 {
		sw.log.Debug("swept", "windows", res.Windows, "entries", res.Entries,
			"deleted", res.Deleted, "dropped", res.Dropped, "watermark", res.Watermark)
	}
	return err
}

// Retries of one backend call on throttling or unavailability.
const (
	retryBase     = 50 * time.Millisecond
	retryMax      = 5 * time.Second
	retryAttempts = 8
)

// retry calls f until it succeeds, fails with an error that retrying
// cannot fix, or has been tried retryAttempts times, waiting an
// exponentially growing delay between tries. The wait is jittered over
// only its upper half (backoff.Equal): one sweeper gains little from
// spreading out, and a throttled backend should get at least half the
// delay to recover.
func (sw *Sweeper) retry(ctx context.Context, f func() error) error {
	p := backoff.Policy{Base: sw.retryBase, Max: sw.retryMax, Attempts: sw.retryAttempts,
		Jitter: backoff.Equal, OnRetry: func(error) { sw.s.m.retries.Inc() }}
	return p.Retry(ctx, func(int) (bool, error) {
		err := f()
		return errors.Is(err, store.ErrThrottled) || errors.Is(err, store.ErrUnavailable), err
	})
}

// pacer spaces deletes so that they average at most rate per second. The
// first batch goes at once; each batch pushes the next one back by its
// size over the rate.
type pacer struct {
	rate float64
	now  func() time.Time

	mu   sync.Mutex
	next time.Time
}

// newPacer returns nil, which never waits, for a zero rate. now must be
// the clock the waiting timers run on (time.Now, which is fake inside a
// synctest bubble), not Options.Now, which a test may hold still.
func newPacer(rate float64, now func() time.Time) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{rate: rate, now: now}
}

// wait blocks until n more deletes may go.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	now := p.now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	p.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		return backoff.Sleep(ctx, d)
	}
	return nil
}

package pebble

import (
	"errors"
	"sync"
	"syscall"
	"time"
)

// Pebble retries a failed flush or compaction at once, in a loop with no
// backoff of its own: on a full disk (no free-space floor, or another
// process filling it) that is hundreds of failed sstables and background
// errors a second, an error line each and a core's worth of CPU. Pebble
// offers no knob for it; its background-error callback runs on the
// retrying goroutine, so waiting there is the backoff. The log is
// rate-limited apart from that, for any background error.

// Background-error timing: the first error is logged at once, then at most
// one line per bgLogEvery, counting those left out; a background error for
// want of space waits bgBackoffMin, doubling up to bgBackoffMax, until a
// flush succeeds.
const (
	bgLogEvery   = 10 * time.Second
	bgBackoffMin = 10 * time.Millisecond
	bgBackoffMax = time.Second
)

// bgErrors rate-limits the log of Pebble's background errors and paces
// its retries on a full disk.
type bgErrors struct {
	mu         sync.Mutex
	lastLogged time.Time // monotonic
	suppressed int
	backoff    time.Duration
}

// succeeded resets the backoff: a flush went through.
func (b *bgErrors) succeeded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backoff = 0
}

// backgroundError is Pebble's EventListener.BackgroundError. Pebble calls
// it holding its database mutex, so the wait is bounded (bgBackoffMax) and
// cut short by Close.
func (s *Store) backgroundError(err error) {
	b := &s.bg
	b.mu.Lock()
	now := time.Now()
	var log bool
	var left int
	if b.lastLogged.IsZero() || now.Sub(b.lastLogged) >= bgLogEvery {
		log, left = true, b.suppressed
		b.lastLogged, b.suppressed = now, 0
	} else {
		b.suppressed++
	}
	var wait time.Duration
	if errors.Is(err, syscall.ENOSPC) {
		b.backoff = min(max(2*b.backoff, bgBackoffMin), bgBackoffMax)
		wait = b.backoff
	}
	b.mu.Unlock()
	if log {
		s.log.Error("embedded store: background error", "component", "pebble", "err", err, "similar_errors_not_logged", left, "retry_in", wait)
	}
	if wait > 0 && s.rec.stop != nil {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.rec.stop:
		}
	}
}

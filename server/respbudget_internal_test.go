package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRespBudgetShares: a take gets its whole want while the budget has
// it, what is left down to the floor after that, and below the floor
// waits; waiters are let in first come first served as bytes come back,
// and one still waiting at the queue time is shed, or gives up with its
// context.
func TestRespBudgetShares(t *testing.T) {
	shed := prometheus.NewCounter(prometheus.CounterOpts{Name: "shed"})
	b := newRespBudget(10, time.Hour, shed, prometheus.NewGauge(prometheus.GaugeOpts{Name: "held"}))
	ctx := context.Background()
	take := func(want, floor, expect int64) {
		t.Helper()
		if n, err := b.take(ctx, want, floor); err != nil || n != expect {
			t.Fatalf("take(%d, %d) = %d, %v; want %d", want, floor, n, err, expect)
		}
	}
	take(6, 2, 6)
	take(6, 2, 4) // what is left, over the floor
	// Two waiters, in order, each for its floor.
	got := make(chan int, 2)
	for i := range 2 {
		go func() {
			if n, err := b.take(ctx, 6, 3); err == nil && n == 3 {
				got <- i
			}
		}()
		for b.waiters() != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	b.release(2) // 2 free: neither fits
	select {
	case i := <-got:
		t.Fatalf("waiter %d let in with 2 bytes free, floor 3", i)
	case <-time.After(20 * time.Millisecond):
	}
	b.release(1) // 3 free: the first only
	if i := <-got; i != 0 {
		t.Fatalf("waiter %d let in first", i)
	}
	select {
	case i := <-got:
		t.Fatalf("waiter %d let in with nothing free", i)
	case <-time.After(20 * time.Millisecond):
	}
	b.release(3)
	if i := <-got; i != 1 {
		t.Fatalf("waiter %d let in second", i)
	}
	// Now 10 used again. grow passes the budget (a page's last
	// item); what is released comes back in full.
	b.grow(5)
	b.release(15)
	if b.inUse() != 0 {
		t.Fatalf("%d bytes in use after every release", b.inUse())
	}

	// Shed at the queue time; gone with its context.
	b = newRespBudget(10, 10*time.Millisecond, shed, prometheus.NewGauge(prometheus.GaugeOpts{Name: "held"}))
	take(10, 1, 10)
	if _, err := b.take(ctx, 5, 1); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("take past the queue time: %v, want ErrOverloaded", err)
	}
	b.queue = time.Hour
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.take(cctx, 5, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("take with its context done: %v, want context.Canceled", err)
	}
	if b.waiters() != 0 || b.inUse() != 10 {
		t.Fatalf("%d waiters, %d bytes in use; want 0 and 10", b.waiters(), b.inUse())
	}
}

func (b *respBudget) waiters() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

func (b *respBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

package lease

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// The lease logic runs on a fake clock shared by the contenders, as the
// shard manager's planner does, and on every backend: the compare-and-swap
// underneath is each backend's own conditional write.
func TestLease(t *testing.T) {
	testbackend.Each(t, func(t *testing.T, open testbackend.Factory) {
		t.Run("TakeRenewExpire", func(t *testing.T) { testTakeRenewExpire(t, open) })
		t.Run("Fencing", func(t *testing.T) { testFencing(t, open) })
		t.Run("OneWinner", func(t *testing.T) { testOneWinner(t, open) })
		t.Run("Release", func(t *testing.T) { testRelease(t, open) })
	})
}

func newLease(t *testing.T, st store.Store, holder string, clk *storetest.Clock, shared bool) *Lease {
	t.Helper()
	l, err := New(Options{Store: st, Role: "manager", Holder: holder, Duration: 15 * time.Second, Now: clk.Now, Exclusive: !shared})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func acquire(t *testing.T, l *Lease) bool {
	t.Helper()
	ok, err := l.Acquire(t.Context())
	if err != nil {
		t.Fatalf("Acquire %s: %v", l.o.Holder, err)
	}
	return ok
}

func testTakeRenewExpire(t *testing.T, open testbackend.Factory) {
	clk := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	st := open(t, clk.Now)
	a, b := newLease(t, st, "a", clk, true), newLease(t, st, "b", clk, true)
	if !acquire(t, a) || acquire(t, b) {
		t.Fatal("a should take the free lease and b be refused")
	}
	if s := a.Status(); !s.Held || s.Record.Epoch != 1 || s.Record.Holder != "a" {
		t.Fatalf("a's status %+v", s)
	}
	// a renews at a third of the lease; b cannot take it while it is kept.
	for range 5 {
		clk.Advance(5 * time.Second)
		if !acquire(t, a) || acquire(t, b) {
			t.Fatal("renewal lost the lease")
		}
	}
	if e := a.Status().Record.Epoch; e != 1 {
		t.Fatalf("renewals moved the epoch to %d", e)
	}
	// a stops renewing: it stops trusting its lease after Duration-Margin,
	// and b takes it over only after Duration, with the next epoch.
	clk.Advance(12 * time.Second)
	if a.Held() {
		t.Fatal("a still trusts a lease it did not renew for 12s of 15s")
	}
	if acquire(t, b) {
		t.Fatal("b took the lease before it expired")
	}
	clk.Advance(3 * time.Second)
	if !acquire(t, b) {
		t.Fatal("b did not take the expired lease")
	}
	if s := b.Status(); s.Record.Epoch != 2 || s.Record.Holder != "b" {
		t.Fatalf("b's status %+v", s)
	}
	if acquire(t, a) {
		t.Fatal("a took the lease back from its live holder")
	}
}

// testFencing is the paused-leader case: a stops (SIGSTOP, a GC pause)
// past its lease, b takes over, a wakes up and tries to act.
func testFencing(t *testing.T, open testbackend.Factory) {
	clk := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	st := open(t, clk.Now)
	a, b := newLease(t, st, "a", clk, true), newLease(t, st, "b", clk, true)
	acquire(t, a)
	if err := a.Fence(t.Context()); err != nil {
		t.Fatalf("the holder's fence: %v", err)
	}
	clk.Advance(20 * time.Second)
	if !acquire(t, b) {
		t.Fatal("b did not take over")
	}
	if err := a.Fence(t.Context()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's fence after the takeover: %v, want ErrNotHeld", err)
	}
	// Even with a clock that says its lease is still valid (skew), the
	// store refuses a's write against its old epoch.
	a.mu.Lock()
	a.doc = []byte(`{"holder":"a","epoch":1,"expires":"2999-01-01T00:00:00Z"}`)
	a.until = clk.Now().Add(time.Hour)
	a.mu.Unlock()
	if err := a.Fence(t.Context()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's fence with a skewed clock: %v, want ErrNotHeld", err)
	}
	if err := b.Fence(t.Context()); err != nil {
		t.Fatalf("b's fence: %v", err)
	}
}

// testOneWinner has many contenders race for a free lease: exactly one
// wins each epoch.
func testOneWinner(t *testing.T, open testbackend.Factory) {
	clk := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	st := open(t, clk.Now)
	for round := range 3 {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins []string
		)
		for i := range 5 {
			l := newLease(t, st, string(rune('a'+i))+string(rune('0'+round)), clk, true)
			wg.Go(func() {
				ok, err := l.Acquire(t.Context())
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					wins = append(wins, l.o.Holder)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("round %d: %d winners %v", round, len(wins), wins)
		}
		clk.Advance(16 * time.Second)
	}
}

func testRelease(t *testing.T, open testbackend.Factory) {
	clk := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	st := open(t, clk.Now)
	a, b := newLease(t, st, "a", clk, true), newLease(t, st, "b", clk, true)
	acquire(t, a)
	if err := a.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.Held() {
		t.Fatal("held after Release")
	}
	if !acquire(t, b) {
		t.Fatal("b could not take a released lease at once")
	}
	if e := b.Status().Record.Epoch; e != 2 {
		t.Fatalf("epoch after release and takeover: %d, want 2", e)
	}
	// On an exclusive backend a new process takes a lease left behind at
	// once: the old holder is known to be gone.
	c := newLease(t, st, "c", clk, false)
	if !acquire(t, c) || c.Status().Record.Epoch != 3 {
		t.Fatalf("exclusive takeover: %+v", c.Status())
	}
}

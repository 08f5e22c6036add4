package loop

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunSchedule: passes run at once and every Interval; failures back
// off doubling from the interval up to MaxBackoff; a panic counts as a
// failure; a trigger runs a pass at once; Run returns when ctx is done.
func TestRunSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		var runs []time.Duration
		var fail atomic.Int32
		fail.Store(4)
		trigger := make(chan struct{}, 1)
		done := make(chan error)
		go func() {
			done <- Run(ctx, Options{Interval: time.Second, MaxBackoff: 10 * time.Second, Trigger: trigger}, func(context.Context) error {
				runs = append(runs, time.Since(start))
				switch n := fail.Add(-1); {
				case n == 0:
					panic("broken pass")
				case n > 0:
					return errors.New("backend down")
				}
				return nil
			})
		}()
		time.Sleep(40 * time.Second)
		synctest.Wait()
		// Fail at 0, then 2 s, 4 s, 8 s later (panic at 14), capped at
		// 10 s: success at 24, then every second.
		want := []time.Duration{0, 2, 6, 14, 24, 25, 26}
		for i, w := range want {
			if i >= len(runs) || runs[i] != w*time.Second {
				t.Fatalf("passes ran at %v, want them to start %v (seconds)", runs, want)
			}
		}
		n := len(runs)
		time.Sleep(100 * time.Millisecond)
		trigger <- struct{}{}
		synctest.Wait()
		if len(runs) != n+1 {
			t.Fatalf("a trigger ran %d passes, want 1", len(runs)-n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestRunNext: after a successful pass, Next sets the wait.
func TestRunNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int32
		done := make(chan error)
		go func() {
			done <- Run(ctx, Options{Interval: time.Hour, Next: func() time.Duration { return time.Minute }}, func(context.Context) error {
				n.Add(1)
				return nil
			})
		}()
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		if got := n.Load(); got != 11 {
			t.Fatalf("%d passes in 10 minutes with Next = 1m, want 11", got)
		}
		cancel()
		<-done
	})
}

func TestRunRefusesNoInterval(t *testing.T) {
	if err := Run(context.Background(), Options{}, func(context.Context) error { return nil }); err == nil {
		t.Fatal("Run without an interval returned nil")
	}
}

// TestRunNextBoundsBackoff: a failing pass is retried no later than Next
// says a healthy one runs. The shard manager's Next is half its narrowest
// shard; a backoff doubling from the 30 s interval would leave a runway of
// seconds without a pass for a minute.
func TestRunNextBoundsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		var runs []time.Duration
		var fail atomic.Int32
		fail.Store(3)
		done := make(chan error)
		go func() {
			done <- Run(ctx, Options{Interval: 30 * time.Second, Next: func() time.Duration { return 500 * time.Millisecond }}, func(context.Context) error {
				runs = append(runs, time.Since(start))
				if fail.Add(-1) >= 0 {
					return errors.New("fenced")
				}
				return nil
			})
		}()
		time.Sleep(2*time.Second + time.Millisecond)
		synctest.Wait()
		cancel()
		<-done
		want := []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second}
		if len(runs) != len(want) {
			t.Fatalf("passes ran at %v, want %v: failures must be retried within Next", runs, want)
		}
		for i := range want {
			if runs[i] != want[i] {
				t.Fatalf("passes ran at %v, want %v", runs, want)
			}
		}
	})
}

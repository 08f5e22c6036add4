package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestRunBoundsAndStops(t *testing.T) {
	var running, peak, done atomic.Int32
	tasks := make([]func(context.Context) error, 20)
	for i := range tasks {
		tasks[i] = func(context.Context) error {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			running.Add(-1)
			done.Add(1)
			return nil
		}
	}
	if err := Run(t.Context(), 3, tasks); err != nil {
		t.Fatal(err)
	}
	if done.Load() != 20 || peak.Load() > 3 {
		t.Fatalf("ran %d tasks, at most %d at once; want 20, at most 3", done.Load(), peak.Load())
	}

	boom := errors.New("boom")
	var after atomic.Int32
	tasks = []func(context.Context) error{
		func(context.Context) error { return boom },
	}
	for range 50 {
		tasks = append(tasks, func(ctx context.Context) error {
			after.Add(1)
			<-ctx.Done() // cancelled by the failure
			return ctx.Err()
		})
	}
	if err := Run(t.Context(), 2, tasks); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the first failure", err)
	}
	if after.Load() == 50 {
		t.Fatal("every task was started after the first failure")
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Run(ctx, 2, []func(context.Context) error{
		func(context.Context) error { return nil }, func(context.Context) error { return nil },
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run on a cancelled context = %v", err)
	}
}

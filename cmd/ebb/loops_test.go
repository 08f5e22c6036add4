package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// ticker is a loop shaped like the shard manager and the sweeper: it ticks
// until its context is cancelled.
func ticker(ticks, exits *atomic.Int32) func(context.Context) {
	return func(ctx context.Context) {
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				exits.Add(1)
				return
			case <-tk.C:
				ticks.Add(1)
			}
		}
	}
}

func TestLoops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoops(slog.New(slog.DiscardHandler))
		var ticks, exits, late atomic.Int32
		l.Add("ticker", ticker(&ticks, &exits))
		l.Add("panics", func(context.Context) { panic("loop bug") })

		// Nothing runs before start: serve starts loops only once it listens.
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if ticks.Load() != 0 {
			t.Fatalf("%d ticks before start", ticks.Load())
		}

		l.start()
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		if ticks.Load() != 3 {
			t.Fatalf("%d ticks in 3.5 s", ticks.Load())
		}
		// A panicking loop did not take the others down.

		l.Add("late", ticker(&late, &exits)) // added after start: runs at once
		time.Sleep(time.Second)
		synctest.Wait()
		if late.Load() != 1 {
			t.Fatalf("late loop ticked %d times", late.Load())
		}

		// stop cancels and waits: when it returns every loop has returned.
		l.stop()
		if exits.Load() != 2 {
			t.Fatalf("%d loops returned by the time stop did", exits.Load())
		}
		l.stop() // safe twice

		l.Add("after stop", func(context.Context) { t.Error("a loop added after stop ran") })
		time.Sleep(time.Second)
		synctest.Wait()
	})
}

func TestLoopsStopBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoops(slog.New(slog.DiscardHandler))
		l.Add("never", func(context.Context) { t.Error("a loop ran without start") })
		l.stop()
		l.start()
		l.Add("never either", func(context.Context) { t.Error("a loop ran after stop") })
		time.Sleep(time.Second)
		synctest.Wait()
	})
}

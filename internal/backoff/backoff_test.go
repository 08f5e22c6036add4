package backoff

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

func TestExponential(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		name        string
		base, limit time.Duration
		attempts    []int
		want        []time.Duration
	}{
		{"doubles up to the limit", 10 * ms, 35 * ms, []int{1, 2, 3, 4, 50}, []time.Duration{10 * ms, 20 * ms, 35 * ms, 35 * ms, 35 * ms}},
		{"reaches the limit exactly", time.Second, 8 * time.Second, []int{1, 2, 3, 4, 5}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}},
		{"attempt below 1 is the first", 50 * ms, 5 * time.Second, []int{0, -3}, []time.Duration{50 * ms, 50 * ms}},
		{"base above the limit", time.Minute, time.Second, []int{1, 2}, []time.Duration{time.Second, time.Second}},
		{"no overflow at huge attempts", time.Nanosecond, math.MaxInt64, []int{63, 64, 1000, math.MaxInt}, []time.Duration{1 << 62, math.MaxInt64, math.MaxInt64, math.MaxInt64}},
		{"no overflow with a huge base", 48 * time.Hour, math.MaxInt64, []int{17, 100}, []time.Duration{math.MaxInt64, math.MaxInt64}},
		{"tiny base grows to the limit", time.Nanosecond, time.Minute, []int{40}, []time.Duration{time.Minute}},
		{"non-positive base", 0, time.Second, []int{1, 5}, []time.Duration{0, 0}},
		{"non-positive limit", time.Second, 0, []int{1, 5}, []time.Duration{0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, a := range c.attempts {
				if got := Exponential(c.base, c.limit, a); got != c.want[i] {
					t.Errorf("Exponential(%v, %v, %d) = %v, want %v", c.base, c.limit, a, got, c.want[i])
				}
			}
		})
	}
}

func TestSleepWaitsTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("slept %v, want 3s", got)
		}
		start = time.Now()
		if err := Sleep(t.Context(), -time.Second); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 0 {
			t.Fatalf("a negative delay waited %v", got)
		}
	})
}

func TestSleepStopsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("returned after %v, want 1s", got)
		}
	})
}

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

func TestJitterRanges(t *testing.T) {
	for _, d := range []time.Duration{1, 2, 3, 10, 999, time.Second} {
		for range 200 {
			if w := Full(d); w < 1 || w > d {
				t.Fatalf("Full(%v) = %v, outside (0, %v]", d, w, d)
			}
			if w := Equal(d); w < d/2 || w > d {
				t.Fatalf("Equal(%v) = %v, outside [%v, %v]", d, w, d/2, d)
			}
		}
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if Full(d) != 0 || Equal(d) != 0 {
			t.Fatalf("a non-positive delay %v jittered to %v and %v", d, Full(d), Equal(d))
		}
	}
}

func TestPolicyDelay(t *testing.T) {
	const ms = time.Millisecond
	p := Policy{Base: 10 * ms, Max: 35 * ms}
	for attempt, want := range map[int]time.Duration{1: 10 * ms, 2: 20 * ms, 3: 35 * ms, 9: 35 * ms} {
		if got := p.Delay(attempt); got != want {
			t.Errorf("no jitter: Delay(%d) = %v, want %v", attempt, got, want)
		}
	}
	p.Jitter = func(d time.Duration) time.Duration { return d / 5 }
	if got := p.Delay(2); got != 4*ms {
		t.Errorf("jittered Delay(2) = %v, want 4ms", got)
	}
	if got := (Policy{Max: time.Second, Jitter: Full}).Delay(1); got != 0 {
		t.Errorf("a zero base gave %v, want 0 (and no call of the jitter)", got)
	}
}

// TestRetry checks the one retry loop: the tries it makes, the waits
// between them and what it returns, with the real Sleep on a fake clock.
func TestRetry(t *testing.T) {
	errBusy := errors.New("busy")
	errBad := errors.New("bad")
	cases := []struct {
		name     string
		attempts int
		// fail[i] is try i+1's error; past its end tries succeed.
		fail      []error
		wantErr   error
		wantTries int
		wantWait  time.Duration
	}{
		{"first try succeeds", 5, nil, nil, 1, 0},
		{"succeeds on the third", 5, []error{errBusy, errBusy}, nil, 3, 3 * time.Second},
		{"not worth retrying", 5, []error{errBusy, errBad}, errBad, 2, time.Second},
		{"attempts run out", 3, []error{errBusy, errBusy, errBusy, errBusy}, errBusy, 3, 3 * time.Second},
		{"below one is one try", 0, []error{errBusy}, errBusy, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var retried []error
				p := Policy{Base: time.Second, Max: 4 * time.Second, Attempts: c.attempts,
					OnRetry: func(err error) { retried = append(retried, err) }}
				tries := 0
				start := time.Now()
				err := p.Retry(t.Context(), func(attempt int) (bool, error) {
					if tries++; attempt != tries {
						t.Fatalf("try %d told it is attempt %d", tries, attempt)
					}
					if attempt > len(c.fail) {
						return false, nil
					}
					err := c.fail[attempt-1]
					return err == errBusy, err
				})
				if err != c.wantErr || tries != c.wantTries {
					t.Fatalf("err %v after %d tries, want %v after %d", err, tries, c.wantErr, c.wantTries)
				}
				if len(retried) != tries-1 {
					t.Fatalf("OnRetry called %d times for %d tries", len(retried), tries)
				}
				if got := time.Since(start); got != c.wantWait {
					t.Fatalf("waited %v, want %v", got, c.wantWait)
				}
			})
		})
	}
}

func TestRetryCountsOnlyRetriesItWaitsFor(t *testing.T) {
	errBusy := errors.New("busy")
	n := 0
	p := Policy{Attempts: 3, OnRetry: func(err error) {
		if err != errBusy {
			t.Fatalf("OnRetry got %v", err)
		}
		n++
	}}
	if err := p.Retry(t.Context(), func(int) (bool, error) { return true, errBusy }); err != errBusy {
		t.Fatalf("err = %v", err)
	}
	// Three tries, two waits: the last failure is returned, not retried.
	if n != 2 {
		t.Fatalf("OnRetry called %d times, want 2", n)
	}
}

func TestRetryStopsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		p := Policy{Base: time.Second, Max: 8 * time.Second, Attempts: 100}
		tries := 0
		start := time.Now()
		err := p.Retry(ctx, func(int) (bool, error) { tries++; return true, errors.New("busy") })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
		// Tries at 0, 1, 3, 7 s; the next wait (8 s) outlasts the deadline.
		if tries != 4 || time.Since(start) != 10*time.Second {
			t.Fatalf("%d tries in %v, want 4 in 10s", tries, time.Since(start))
		}
	})
}

func TestPolicyWaitUsesItsSleep(t *testing.T) {
	var slept []time.Duration
	p := Policy{Base: 5 * time.Millisecond, Max: time.Second, Jitter: func(d time.Duration) time.Duration { return d - 1 },
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
	for a := 1; a <= 3; a++ {
		if err := p.Wait(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{5*time.Millisecond - 1, 10*time.Millisecond - 1, 20*time.Millisecond - 1}
	if len(slept) != 3 || slept[0] != want[0] || slept[1] != want[1] || slept[2] != want[2] {
		t.Fatalf("slept %v, want %v", slept, want)
	}
}

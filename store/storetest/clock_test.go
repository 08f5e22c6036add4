package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

func TestClock(t *testing.T) {
	c := NewClock(Epoch)
	if got := c.Now(); !got.Equal(Epoch) {
		t.Fatalf("Now = %v, want %v", got, Epoch)
	}
	c.Advance(1500 * time.Millisecond)
	if got := c.Now(); !got.Equal(Epoch.Add(1500 * time.Millisecond)) {
		t.Fatalf("after Advance: %v", got)
	}
	c.Set(Epoch.Add(-time.Hour))
	if got := c.Now(); !got.Equal(Epoch.Add(-time.Hour)) {
		t.Fatalf("after Set backwards: %v", got)
	}
}

// TestClockConcurrent moves and reads the clock from many goroutines; run
// with -race it shows the Clock is safe to hand to a Store that reads it
// while a test moves it.
func TestClockConcurrent(t *testing.T) {
	c := NewClock(Epoch)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), Epoch.Add(8000*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after 8000 concurrent 1 ms advances: %v, want %v", got, want)
	}
}

// TestSortKeys checks the reference order the suite compares backends
// with: natural order of mixed tuples, prefixes first.
func TestSortKeys(t *testing.T) {
	keys := [][]any{
		{int64(1), "b"}, {int64(-1), "a"}, {int64(1), "a\x00"}, {int64(1), "a"}, {int64(1), ""},
	}
	sortKeys(keys, false)
	want := [][]any{{int64(-1), "a"}, {int64(1), ""}, {int64(1), "a"}, {int64(1), "a\x00"}, {int64(1), "b"}}
	for i := range want {
		if !tupleEqual(want[i], keys[i]) {
			t.Fatalf("ascending: %v", keys)
		}
	}
	sortKeys(keys, true)
	for i := range want {
		if !tupleEqual(want[len(want)-1-i], keys[i]) {
			t.Fatalf("descending: %v", keys)
		}
	}
	if !inBounds([]any{int64(1), "a"}, boundOf(true, int64(1)), boundOf(false, int64(2))) ||
		inBounds([]any{int64(1), "a"}, boundOf(false, int64(1)), boundOf(true, int64(2))) ||
		!inBounds([]any{int64(1), "a"}, boundOf(true, int64(1), "a"), boundOf(true, int64(1))) {
		t.Fatal("inBounds prefix semantics")
	}
}

func boundOf(incl bool, vals ...any) store.Bound { return store.Bound{Values: vals, Inclusive: incl} }

package pebble

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestRowLocksExclusive checks that an exclusive holder of a row excludes
// every other writer of that row, whatever else their batches lock, and
// that batches locking overlapping stripes in any mix never deadlock.
func TestRowLocksExclusive(t *testing.T) {
	l := newRowLocks()
	const rows, workers, rounds = 2000, 8, 300
	keys := make([][]byte, rows)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "row-%d", i)
	}
	// counters[r] is read and written only under row r's exclusive lock;
	// the race detector and the final sum check that.
	counters := make([]int, rows)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				var set rowSet
				var mine []int
				for range 1 + rng.IntN(200) {
					r := rng.IntN(rows)
					excl := rng.IntN(4) == 0
					l.add(&set, keys[r], excl)
					if excl {
						mine = append(mine, r)
					}
				}
				l.lock(&set)
				for _, r := range mine {
					counters[r]++
				}
				l.unlock(&set)
			}
		})
	}
	wg.Go(func() { // a partition deletion now and then
		for range rounds / 10 {
			all := allShared()
			l.lock(all)
			l.unlock(all)
		}
	})
	wg.Wait()
	total := 0
	for _, c := range counters {
		total += c
	}
	if total == 0 {
		t.Fatal("no exclusive row was ever locked")
	}
}

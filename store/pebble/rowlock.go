package pebble

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"unsafe"
)

// rowStripes is how many locks the rows of a Store share. A batch locks the
// stripes of its rows, so two batches wait for each other only when one of
// them reads a row before writing it and they share a stripe.
const rowStripes = 256

// rowLocks orders the writers of each row. A write that reads a row before
// writing it (a conditional mutation, DeleteIfExpired) holds the row's
// stripe exclusively from that read until its batch is applied; every other
// write holds its rows' stripes shared while it applies. Stripes are chosen
// by a hash of the row key, so a sweeper's batch of a thousand deletes
// delays only the writes that share a stripe with one of its rows, and
// conditional writes to different rows run side by side.
//
// No stripe is held while a batch waits for its fsync (see commit): a batch
// is visible once applied, before it is durable, whatever the locking, and
// a later batch that read it is after it in the write-ahead log, so it is
// never durable without it.
type rowLocks struct {
	seed    maphash.Seed
	stripes [rowStripes]paddedRWMutex
}

// paddedRWMutex keeps neighbouring stripes off one cache line.
type paddedRWMutex struct {
	sync.RWMutex
	_ [64 - unsafe.Sizeof(sync.RWMutex{})]byte
}

func newRowLocks() *rowLocks { return &rowLocks{seed: maphash.MakeSeed()} }

// rowSet is the stripes one batch locks, as bitmaps: a stripe in excl is
// locked exclusively, one only in shared is locked shared.
type rowSet struct {
	excl, shared [rowStripes / 64]uint64
}

// add records the stripe of the row whose full key is key.
func (l *rowLocks) add(set *rowSet, key []byte, exclusive bool) {
	i := maphash.Bytes(l.seed, key) % rowStripes
	if exclusive {
		set.excl[i/64] |= 1 << (i % 64)
	} else {
		set.shared[i/64] |= 1 << (i % 64)
	}
}

// allShared returns a set holding every stripe shared, for a write that touches
// rows it cannot name (a whole partition).
func allShared() *rowSet {
	var set rowSet
	for i := range set.shared {
		set.shared[i] = ^uint64(0)
	}
	return &set
}

// lock takes the stripes of set in ascending order, the one order every
// batch uses, so two batches never wait for each other in a cycle.
func (l *rowLocks) lock(set *rowSet) {
	for w := range set.excl {
		excl := set.excl[w]
		for m := excl | set.shared[w]; m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m)
			mu := &l.stripes[w*64+b]
			if excl&(1<<b) != 0 {
				mu.Lock()
			} else {
				mu.RLock()
			}
		}
	}
}

// unlock releases what lock took.
func (l *rowLocks) unlock(set *rowSet) {
	for w := range set.excl {
		excl := set.excl[w]
		for m := excl | set.shared[w]; m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m)
			mu := &l.stripes[w*64+b]
			if excl&(1<<b) != 0 {
				mu.Unlock()
			} else {
				mu.RUnlock()
			}
		}
	}
}

package pebble

import (
	"bytes"
	"slices"
	"sync"
)

// applyScratch holds the row keys of one batch being applied and the order
// its mutations go into the Pebble batch. It is pooled: a batch of a
// thousand rows has some 50 KB of keys.
type applyScratch struct {
	keys  []byte  // the row keys, back to back
	ends  []int   // ends[i] is where mutation i's key ends in keys
	order []int32 // mutation indexes, in the order they are applied
	slots []int   // the write-generation slots the batch counted (generation.go)
}

var applyScratchPool = sync.Pool{New: func() any { return new(applyScratch) }}

// getApplyScratch returns an empty scratch whose order is 0..n-1.
func getApplyScratch(n int) *applyScratch {
	sc := applyScratchPool.Get().(*applyScratch)
	sc.keys, sc.ends, sc.slots = sc.keys[:0], sc.ends[:0], sc.slots[:0]
	sc.order = slices.Grow(sc.order[:0], n)[:n]
	for i := range sc.order {
		sc.order[i] = int32(i)
	}
	return sc
}

// maxPooledKeys bounds the key bytes a pooled scratch keeps, so that one
// huge batch does not pin its buffer for ever.
const maxPooledKeys = 1 << 20

func putApplyScratch(sc *applyScratch) {
	if cap(sc.keys) > maxPooledKeys {
		return
	}
	applyScratchPool.Put(sc)
}

// keyBefore reports whether a mutation before i writes mutation i's row.
// The keys of mutations 0..i are recorded.
func (sc *applyScratch) keyBefore(i int) bool {
	k := sc.key(i)
	for j := range i {
		if bytes.Equal(sc.key(j), k) {
			return true
		}
	}
	return false
}

// key is mutation i's row key.
func (sc *applyScratch) key(i int) []byte {
	start := 0
	if i > 0 {
		start = sc.ends[i-1]
	}
	return sc.keys[start:sc.ends[i]:sc.ends[i]]
}

// sortBatch orders the mutations by row key, those of one row in the
// batch's own order (so the last write of a row still wins).
//
// Pebble inserts a batch into its memtable (a skiplist) one key at a time,
// remembering where the last key went: a key just after the last one is
// found from there, any other from the top of the list. Events spread
// over many index ids, or list items over many entities, arrive
// interleaved, so in the batch's own order nearly every key is a search
// from the top; in key order most are a step from the one before. A batch
// already in key order is left as it is.
func (sc *applyScratch) sortBatch() {
	sorted := true
	for i := 1; i < len(sc.order) && sorted; i++ {
		sorted = bytes.Compare(sc.key(i-1), sc.key(i)) <= 0
	}
	if sorted {
		return
	}
	slices.SortFunc(sc.order, func(a, b int32) int {
		if c := bytes.Compare(sc.key(int(a)), sc.key(int(b))); c != 0 {
			return c
		}
		return int(a - b)
	})
}

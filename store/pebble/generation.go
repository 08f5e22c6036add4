package pebble

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

var _ store.Generations = (*Store)(nil)

// genSlots is how many write counters the partitions share: a write to one
// partition makes the answers kept for another of its slot stale too, which
// costs a read and nothing else.
const genSlots = 1 << 12

// generations counts the writes begun and ended on each slot of partitions
// (see store.Generations).
type generations struct {
	seed     maphash.Seed
	started  [genSlots]atomic.Uint64
	finished [genSlots]atomic.Uint64
}

func newGenerations() *generations { return &generations{seed: maphash.MakeSeed()} }

// slot is the counter of table id's partition of encoded key pk.
func (g *generations) slot(id uint64, pk []byte) int {
	return int((maphash.Bytes(g.seed, pk) ^ id*0x9e3779b97f4a7c15) % genSlots)
}

// begin counts a write begun on every partition of rs in table id, before
// any of it can be read, and appends the slots it counted to dst (once per
// run of mutations of one partition, as a batch of one list's items is);
// end, called with them once the write has ended whatever its outcome,
// counts them ended.
func (g *generations) begin(dst []int, id uint64, rs []kit.ResolvedMutation) []int {
	for i := range rs {
		if i > 0 && bytes.Equal(rs[i].PartitionKey, rs[i-1].PartitionKey) {
			continue
		}
		slot := g.slot(id, rs[i].PartitionKey)
		g.started[slot].Add(1)
		dst = append(dst, slot)
	}
	return dst
}

func (g *generations) end(slots []int) {
	for _, slot := range slots {
		g.finished[slot].Add(1)
	}
}

// Generation returns the write generation of a partition; see
// store.Generations.
func (s *Store) Generation(name string, partition []any) (store.Generation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return store.Generation{}, err
	}
	_, pk, err := kit.ResolvePartition(&t.Spec, partition)
	if err != nil {
		return store.Generation{}, err
	}
	i := s.gens.slot(t.ID, pk)
	// Finished first: a write ended after it was read but begun before
	// Started was makes the two differ (not settled).
	fin := s.gens.finished[i].Load()
	return store.Generation{Table: t.ID, Started: s.gens.started[i].Load(), Finished: fin}, nil
}

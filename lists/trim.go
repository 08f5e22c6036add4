package lists

import (
	"cmp"
	"context"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/keyenc"
)

// listStripes is how many locks serialize the adds to capped lists within
// one Service: enough that unrelated lists rarely wait for each other.
const listStripes = 64

// listLocks serialize the read and write of an Add to a capped list with
// every other such Add to the same list in the process, so that on a
// store no other process writes (the embedded backend) a list never
// holds more than its cap, not even for a moment.
type listLocks struct {
	seed  maphash.Seed
	locks [listStripes]sync.Mutex
}

// capLocks are the process's: every Service of the process shares them,
// since two Services on one embedded store (which only one process opens)
// write the same lists.
var capLocks = &listLocks{seed: maphash.MakeSeed()}

func (l *listLocks) lock(table, entityID string) *sync.Mutex {
	var h maphash.Hash
	h.SetSeed(l.seed)
	h.WriteString(table)
	h.WriteByte(0)
	h.WriteString(entityID)
	return &l.locks[h.Sum64()%listStripes]
}

func checkMaxItems(n *int) error {
	if n != nil && (*n < 0 || *n > MaxMaxItems) {
		return store.Errorf(store.ErrInvalid, "lists: max_items %d out of range 0..%d (0: no cap)", *n, MaxMaxItems)
	}
	return nil
}

// addCapped writes muts, the upserts of an Add, to a list of a capped
// feature together with the deletes that keep the list within
// f.MaxItems: the list's live keys are read, merged with the new ones,
// and every key beyond the cap in that order (the oldest) is deleted in
// the same Write as the upserts, or, if it is one of the new items, not
// written at all. The Write is as atomic as write makes it (one batch on
// the embedded backend, a TransactWriteItems on DynamoDB with
// transactions, a logged batch of one partition on CQL, up to the
// backend's MaxAtomicBatch).
//
// Where other processes may add to the same list (the remote backends),
// no lock of this process can serialize the adds, and none is taken: two
// adds can each read the list before the other wrote and together leave
// it longer than the cap; each add therefore reads the list again after
// its write and deletes what lies beyond the cap then, so that once every
// add has returned the list is within its cap and holds its newest items.
// Where no other process can write (the embedded backend), the adds to a
// list are serialized by capLocks instead and the list never passes its
// cap.
func (s *Service) addCapped(ctx context.Context, f Feature, entityID string, muts []store.Mutation, res *AddResult) error {
	if len(muts) == 0 {
		return nil
	}
	if !s.caps.SharedAcrossProcesses {
		mu := capLocks.lock(f.Table, entityID)
		mu.Lock()
		defer mu.Unlock()
	}
	existing, err := s.liveKeys(ctx, f, entityID)
	if err != nil {
		return err
	}
	batch, trimmed := capBatch(f.MaxItems, entityID, existing, muts)
	if err := s.write(ctx, f.Table, batch); err != nil {
		return err
	}
	res.Trimmed += trimmed
	if !s.caps.SharedAcrossProcesses {
		return nil
	}
	n, err := s.trim(ctx, f, entityID)
	res.Trimmed += n
	return err
}

// capBatch returns the batch an Add to a list capped at max writes: the
// upserts of muts that stay within the cap once merged with the list's
// existing keys (newest first), followed by the deletes of the existing
// keys beyond it, and how many items the cap removes (existing ones
// deleted and new ones never written). Upserts come first so that a Write
// split into several atomic chunks never deletes before it adds.
func capBatch(max int, entityID string, existing []string, muts []store.Mutation) ([]store.Mutation, int) {
	type entry struct {
		key      string
		existing bool
		mut      int // index in muts, or -1
	}
	merged := make([]entry, 0, len(existing)+len(muts))
	at := make(map[string]int, len(muts))
	for i, m := range muts {
		k := m.Clustering[0].(string)
		at[k] = i
		merged = append(merged, entry{key: k, mut: i})
	}
	for _, k := range existing {
		if i, ok := at[k]; ok {
			merged[i].existing = true // re-added: the upsert replaces it
			continue
		}
		merged = append(merged, entry{key: k, existing: true, mut: -1})
	}
	if len(merged) <= max {
		return muts, 0
	}
	// Item keys start with the timestamp's fixed-width digits: newest
	// first is descending key order.
	slices.SortFunc(merged, func(a, b entry) int { return cmp.Compare(b.key, a.key) })
	keep := make([]bool, len(muts))
	for _, e := range merged[:max] {
		if e.mut >= 0 {
			keep[e.mut] = true
		}
	}
	batch := make([]store.Mutation, 0, len(muts)+len(merged)-max)
	for i, m := range muts {
		if keep[i] {
			batch = append(batch, m)
		}
	}
	partition := []any{entityID}
	for _, e := range merged[max:] {
		if e.existing {
			batch = append(batch, store.Mutation{Kind: store.DeleteRow, Partition: partition, Clustering: []any{e.key}})
		}
	}
	return batch, len(merged) - max
}

// trim deletes the live items of a list beyond its feature's cap, in
// batches of at most the backend's DeleteBatch, and returns how many.
func (s *Service) trim(ctx context.Context, f Feature, entityID string) (int, error) {
	keys, err := s.liveKeys(ctx, f, entityID)
	if err != nil || len(keys) <= f.MaxItems {
		return 0, err
	}
	beyond := keys[f.MaxItems:]
	chunk := max(1, s.caps.DeleteBatch)
	partition := []any{entityID}
	n := 0
	for len(beyond) > 0 {
		k := min(chunk, len(beyond))
		batch := make([]store.Mutation, k)
		for i, key := range beyond[:k] {
			batch[i] = store.Mutation{Kind: store.DeleteRow, Partition: partition, Clustering: []any{key}}
		}
		if err := s.st.Write(ctx, f.Table, batch); err != nil {
			return n, err
		}
		n += k
		beyond = beyond[k:]
	}
	return n, nil
}

// liveKeys returns the item keys of a list's live items, newest first.
func (s *Service) liveKeys(ctx context.Context, f Feature, entityID string) ([]string, error) {
	var keys []string
	buf := make([]byte, 0, itemKeyLen)
	err := s.eachLive(ctx, f, entityID, func(enc []byte) error {
		k, rest, err := keyenc.AppendDecodedBytes(buf[:0], enc, true)
		if err != nil || len(rest) != 0 {
			return store.Errorf(store.ErrStorageFault, "lists: malformed item key %x", enc)
		}
		buf = k
		keys = append(keys, string(k))
		return nil
	})
	return keys, err
}

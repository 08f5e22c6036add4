package expiry

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Due markers: what lets an idle sweeper read (almost) nothing.
//
// Finding out that a window holds no entries costs Shards reads of the
// index, so a sweeper that walked every window would read Shards times a
// second forever, on an empty store too. Instead every writer records, in
// one partition of IndexTable of its own (markPartition), one marker per
// window it puts entries in, before the entries themselves; the sweeper
// reads the first page of markers (one small read, in window order),
// sweeps only the windows named there, and removes a window's marker once
// the window is finished. The first marker past now is the earliest due
// time of the whole index, and the sweeper sleeps until then. Markers are
// the expiry index's own rows, so the meter counts them as its cost.
//
// Why this is safe across replicas: a marker is written before its entries
// (and they before their rows), so a marker is in the store no later than
// the entries it stands for; and an entry is due no sooner than Grace after
// its write started, so by the time its window has ended, and the sweeper
// may remove the marker, every entry of the window has landed (a write
// slower than Grace re-indexes its rows into a later window, with a marker
// of its own). A writer therefore writes each window's marker once and
// remembers it (markCache): a second write into the same window needs
// none, whether or not the sweeper has removed the marker meanwhile.
//
// How soon a marker is seen: a write through this process wakes its
// sweeper at once (Sweeper.Wake), so a row due soon is swept on time after
// any sleep. A write through another replica wakes nobody: the sweeper
// reads the markers again at least every IdleInterval, which bounds the
// extra delay of such rows, and the idle cost (one read per IdleInterval).

// markPartition is the IndexTable partition of the due markers: no entry
// has a window that early nor a negative shard. A marker's clustering key
// is its window's start as the due time, with no table and a one-byte id.
var markPartition = []any{int64(math.MinInt64), int64(-1)}

func markClustering(w int64) []any { return []any{time.UnixMilli(w).UTC(), "", []byte{0}} }

func markUpsert(w int64) store.Mutation {
	return store.Mutation{
		Partition: markPartition, Clustering: markClustering(w), NoExpiry: true,
		Cells: []store.Cell{
			{Column: "pk", Value: []byte{}},
			{Column: "ck", Value: []byte{}},
			{Column: "expires_at", Value: time.UnixMilli(w).UTC()},
		},
	}
}

func markDeletion(w int64) store.Mutation {
	return store.Mutation{Kind: store.DeleteRow, Partition: markPartition, Clustering: markClustering(w)}
}

// markCacheSize bounds the windows a writer remembers having marked; past
// it the memory starts over, which costs a marker write again per window.
const markCacheSize = 4096

// markCache is the windows this process has written a marker for.
type markCache struct {
	mu sync.Mutex
	w  map[int64]struct{}
}

// missing returns the windows of entries with no marker written by this
// process yet, in order of first appearance.
func (c *markCache) missing(entries []entry) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for i := range entries {
		w := entries[i].window
		if _, ok := c.w[w]; ok {
			continue
		}
		seen := false
		for _, o := range out {
			seen = seen || o == w
		}
		if !seen {
			out = append(out, w)
		}
	}
	return out
}

func (c *markCache) add(ws []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil || len(c.w)+len(ws) > markCacheSize {
		c.w = make(map[int64]struct{}, markCacheSize)
	}
	for _, w := range ws {
		c.w[w] = struct{}{}
	}
}

// writeMarks records the markers of entries' windows that this process has
// not marked yet, deferred where the backend can (the entries and the row
// written right after sync them), and wakes the sweeper if one of them is
// earlier than what it sleeps towards.
func (s *Store) writeMarks(ctx context.Context, entries []entry) error {
	if !s.marked {
		return nil
	}
	ws := s.marks.missing(entries)
	if len(ws) == 0 {
		return nil
	}
	muts := make([]store.Mutation, len(ws))
	for i, w := range ws {
		muts[i] = markUpsert(w)
	}
	var err error
	if dw, ok := store.As[store.DeferredWriter](s.inner); ok {
		err = dw.WriteDeferred(ctx, IndexTable, muts)
	} else {
		err = s.inner.Write(ctx, IndexTable, muts)
	}
	if err != nil {
		return err
	}
	s.marks.add(ws)
	s.sweep.noteDue(ws)
	return nil
}

// markPage is how many markers one read returns: a pass needs those up to
// now and one after, and a small page is one read unit on every provider
// however many windows ahead hold entries (rows with a TTL of days mark a
// window every second of writing).
const markPage = 32

// readMarks returns the windows of the page of markers after the page
// token, in window order, and the token of the next page.
func (sw *Sweeper) readMarks(ctx context.Context, token []byte) ([]int64, []byte, error) {
	q := store.Query{Partition: markPartition, Limit: markPage, PageToken: token}
	page, err := sw.readIndex(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("expiry: read due markers: %w", err)
	}
	ws := make([]int64, 0, len(page.Rows))
	for _, r := range page.Rows {
		due, ok := r.Clustering[0].(time.Time)
		if !ok {
			return nil, nil, errBadEntry
		}
		ws = append(ws, due.UnixMilli())
	}
	return ws, page.NextPageToken, nil
}

// noteDue tells the sweeper that windows now hold entries; it wakes the
// loop when one is earlier than anything it knew of.
func (sw *Sweeper) noteDue(ws []int64) {
	earliest := int64(math.MaxInt64)
	for _, w := range ws {
		earliest = min(earliest, w)
	}
	for {
		cur := sw.woken.Load()
		if earliest >= cur {
			return // a wake-up at least as early is already pending
		}
		if sw.woken.CompareAndSwap(cur, earliest) {
			break
		}
	}
	if earliest >= sw.next.Load() {
		return // the sweeper wakes by then anyway; Next reads woken too
	}
	select {
	case sw.wake <- struct{}{}:
	default:
	}
}

// IsDueMarker reports whether m writes or removes a due marker rather
// than an index entry, for callers that count a write's entries.
func IsDueMarker(m store.Mutation) bool {
	return len(m.Partition) == 2 && m.Partition[0] == markPartition[0] && m.Partition[1] == markPartition[1]
}

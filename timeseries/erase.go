package timeseries

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Erase selects the events EraseEvents removes: every event of IndexID
// in [From, To), or, when EventID is set, the one event keyed by
// (IndexID, Timestamp, EventID).
type Erase struct {
	// IndexID is required: 1..MaxIDBytes bytes of valid UTF-8.
	IndexID string
	// From and To bound the timestamps of a range erase: [From, To). A
	// zero From or To leaves that side unbounded, so that with both zero
	// every event of IndexID that any shard still holds is erased,
	// including events past retention whose shard is not dropped yet.
	// They must be zero when EventID is set.
	From, To time.Time
	// Timestamp and EventID, when EventID is set, select one event; its
	// Timestamp is required then (millisecond precision, 1970..9999).
	Timestamp time.Time
	EventID   string
	// Progress, when set, is called after each shard the erase has
	// visited, from the goroutine that called EraseEvents, so that a long
	// erase can report how far it is.
	Progress func(EraseProgress)
}

// EraseProgress is how far an erase is: the shard just visited and the
// totals so far.
type EraseProgress struct {
	// Shard is the shard table just visited, and Removed the events
	// removed from it.
	Shard   string
	Removed int64
	// Done of Total shards are visited; TotalRemoved events are removed
	// so far.
	Done, Total  int
	TotalRemoved int64
}

// EraseResult is what an erase did.
type EraseResult struct {
	// Removed counts the events the erase found and deleted. An event
	// written into the range while the erase runs may be deleted without
	// being counted (a whole partition goes at once), or may survive.
	Removed int64
	// Shards counts the shards visited: those that exist and overlap the
	// range.
	Shards int
}

// eraseBatch is the most events a partial partition's erase reads, and
// then deletes, at a time.
const eraseBatch = 1000

// EraseEvents deletes events of one index_id from the index, for an
// erasure request: one event, or every event over a time range, in every
// shard that holds a part of the range (named as the HTTP route, DELETE
// /v1/indexes/{name}/events, and package client's Client.EraseEvents).
// It is idempotent: erasing again removes nothing more and succeeds.
//
// A request that is malformed (no IndexID, From not before To, an
// EventID without a Timestamp or with a range) wraps store.ErrInvalid;
// an unknown index is ErrIndexNotFound; nothing is deleted then.
//
// Within each shard the erase visits the partition buckets of IndexID the
// range covers: it reads each one's keys in the range, to count them,
// then deletes a partition the range covers whole with one
// store.Data.DeletePartition and the events of a partition it covers in
// part (the range's edges) with row deletes. The guarantee against
// concurrent writes to the same index_id: every event whose write was
// acknowledged before EraseEvents was called, and whose timestamp lies in
// the range, is gone once it returns nil; a write acknowledged after it
// returned is kept and readable; a write that overlaps the erase may be
// kept or removed, never half-written. (On CQL backends a write is
// ordered against the erase by its write timestamp, so a write from
// another process whose clock lags this one's may lose to the erase's
// tombstones until its clock passes them; see docs/backends.md.)
//
// The erase acts on the shards, whatever the index's migration phase;
// events that are still only in a legacy table being migrated from are
// not erased. An error may come after part of the range was erased;
// erasing again finishes it.
func (s *Service) EraseEvents(ctx context.Context, index string, e Erase) (EraseResult, error) {
	cfg, err := s.config(ctx, index)
	if err != nil {
		return EraseResult{}, err
	}
	if err := checkID("index_id", e.IndexID); err != nil {
		return EraseResult{}, err
	}
	if e.EventID != "" {
		return s.eraseOne(ctx, cfg, e)
	}
	if !e.Timestamp.IsZero() {
		return EraseResult{}, store.Errorf(store.ErrInvalid, "timestamp %s without an event_id: an erase of one event needs both (or give from and to for a range)",
			timefmt.Format(e.Timestamp))
	}
	if !e.From.IsZero() && !e.To.IsZero() && !e.From.Before(e.To) {
		return EraseResult{}, store.Errorf(store.ErrInvalid, "from %s is not before to %s",
			timefmt.Format(e.From), timefmt.Format(e.To))
	}
	lo, hi := int64(0), int64(math.MaxInt64)
	if !e.From.IsZero() {
		lo = max(lo, ceilMs(e.From))
	}
	if !e.To.IsZero() {
		hi = ceilMs(e.To)
	}
	if lo >= hi {
		return EraseResult{}, nil
	}
	// A fresh list of shards: one created since the cache was filled may
	// hold events acknowledged before the erase began.
	starts, err := s.shardStarts(ctx, cfg, true)
	if err != nil {
		return EraseResult{}, err
	}
	var shards []int64
	for _, sh := range starts {
		if cfg.shardEnd(sh) > lo && sh < hi {
			shards = append(shards, sh)
		}
	}
	var res EraseResult
	for i, sh := range shards {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("timeseries: erase from %s: %w", index, err)
		}
		n, err := s.eraseShard(ctx, cfg, e.IndexID, sh, lo, hi)
		res.Removed += n
		if err != nil {
			return res, fmt.Errorf("timeseries: erase from %s (%d events removed so far; erasing again is safe): %w", cfg.shardTable(sh), res.Removed, err)
		}
		res.Shards++
		if e.Progress != nil {
			e.Progress(EraseProgress{Shard: cfg.shardTable(sh), Removed: n, Done: i + 1, Total: len(shards), TotalRemoved: res.Removed})
		}
	}
	s.metrics.erased(index, res.Removed)
	return res, nil
}

// eraseOne deletes the one event e names, counting it when it was there.
func (s *Service) eraseOne(ctx context.Context, cfg Config, e Erase) (EraseResult, error) {
	if err := checkID("event_id", e.EventID); err != nil {
		return EraseResult{}, err
	}
	if !e.From.IsZero() || !e.To.IsZero() {
		return EraseResult{}, store.Errorf(store.ErrInvalid, "an erase of one event (event_id set) takes a timestamp, not from or to")
	}
	if e.Timestamp.IsZero() {
		return EraseResult{}, store.Errorf(store.ErrInvalid, "an erase of one event needs its timestamp as well as its event_id")
	}
	if err := timefmt.UnixYears.Check(e.Timestamp); err != nil {
		return EraseResult{}, store.Errorf(store.ErrInvalid, "timestamp: %v", err)
	}
	ms := e.Timestamp.UnixMilli()
	sh := cfg.shardOf(ms)
	starts, err := s.shardStarts(ctx, cfg, true)
	if err != nil {
		return EraseResult{}, err
	}
	if _, ok := slices.BinarySearch(starts, sh); !ok {
		return EraseResult{}, nil // no shard, no event
	}
	table := cfg.shardTable(sh)
	part := []any{e.IndexID, cfg.bucketOf(ms)}
	key := []any{time.UnixMilli(ms).UTC(), e.EventID}
	var res EraseResult
	switch _, err := s.st.Get(ctx, table, part, key); {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
		// Gone already, or its shard was dropped meanwhile: the delete
		// below is still made, so that an erase never races a write
		// between this read and its return.
	case err != nil:
		return EraseResult{}, fmt.Errorf("timeseries: erase from %s: %w", table, err)
	default:
		res.Removed = 1
	}
	err = s.st.Write(ctx, table, []store.Mutation{{Kind: store.DeleteRow, Partition: part, Clustering: key}})
	switch {
	case errors.Is(err, store.ErrTableNotFound):
		s.invalidateShards(cfg.Name)
		return EraseResult{}, nil
	case err != nil:
		return EraseResult{}, fmt.Errorf("timeseries: erase from %s: %w", table, err)
	}
	res.Shards = 1
	s.metrics.erased(cfg.Name, res.Removed)
	return res, nil
}

// eraseShard erases indexID's events of [lo, hi) from the shard starting
// at sh and returns how many it removed. A shard dropped meanwhile holds
// nothing any more.
func (s *Service) eraseShard(ctx context.Context, cfg Config, indexID string, sh, lo, hi int64) (int64, error) {
	table := cfg.shardTable(sh)
	// The layout in force at the shard's start lays out all of it.
	tb, pb := cfg.layoutAt(sh)
	first, last := max(lo, sh)/pb, min(hi-1, sh+tb-1)/pb
	var removed int64
	for b := first; b <= last; b++ {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		pLo, pHi := b*pb, (b+1)*pb
		whole := lo <= pLo && pHi <= hi
		n, err := s.erasePartition(ctx, table, []any{indexID, b}, max(lo, pLo), min(hi, pHi), whole)
		removed += n
		if errors.Is(err, store.ErrTableNotFound) {
			s.invalidateShards(cfg.Name)
			return removed, nil
		}
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// erasePartition erases the rows of one partition with timestamps in [lo,
// hi): the whole partition at once when whole (the range covers it), row
// by row otherwise. It reads the keys first, eraseBatch at a time, to
// count them; an empty partition costs that read alone.
func (s *Service) erasePartition(ctx context.Context, table string, part []any, lo, hi int64, whole bool) (int64, error) {
	low := store.Bound{Values: []any{time.UnixMilli(lo).UTC()}, Inclusive: true}
	high := store.Bound{Values: []any{time.UnixMilli(hi).UTC()}}
	var removed int64
	batch := max(s.caps.DeleteBatch, 1)
	for {
		var keys [][]any
		_, err := s.st.Scan(ctx, table, store.Query{Partition: part, Low: low, High: high, Limit: eraseBatch}, func(r *store.RawRow) error {
			ck, err := store.DecodeClustering(&shardSchema, r.Clustering)
			if err != nil {
				return fmt.Errorf("timeseries: decode event key: %w", err)
			}
			keys = append(keys, ck)
			return nil
		})
		if err != nil {
			return removed, err
		}
		if whole {
			// Counting goes on to the partition's end; the delete is one
			// operation whatever it holds.
			removed += int64(len(keys))
			if len(keys) == eraseBatch {
				low = store.Bound{Values: keys[len(keys)-1]}
				continue
			}
			if removed > 0 {
				if err := s.st.DeletePartition(ctx, table, part); err != nil {
					return 0, err
				}
			}
			return removed, nil
		}
		for lo := 0; lo < len(keys); lo += batch {
			chunk := keys[lo:min(lo+batch, len(keys))]
			muts := make([]store.Mutation, len(chunk))
			for i, k := range chunk {
				muts[i] = store.Mutation{Kind: store.DeleteRow, Partition: part, Clustering: k}
			}
			if err := s.st.Write(ctx, table, muts); err != nil {
				return removed, err
			}
			removed += int64(len(chunk))
		}
		if len(keys) < eraseBatch {
			return removed, nil
		}
		low = store.Bound{Values: keys[len(keys)-1]}
	}
}

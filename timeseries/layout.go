package timeseries

import (
	"slices"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// relayout returns the layout epochs of old once its buckets become
// want's, at now, given the starts (Unix ms, sorted) of old's existing
// shards; nil when the index is back to one layout.
//
// The new layout takes effect at the boundary B: the first time, a
// multiple of both the old and the new table bucket, at or after the end
// of the last shard of the old layout that exists or that the runway
// holds now (the hot shard and Runway shards after it). Every shard made
// so far, and every shard the manager makes before B, has the old layout;
// B is past the runway, so no write at or after it has been accepted yet.
//
// A change whose first shard does not exist yet has not taken effect: a
// later change replaces it (and a change back to the layout before it
// cancels it). Once its first shard exists, a later change is a further
// epoch after it.
//
// The table buckets must divide one another, so that B is at most one
// table bucket of the wider past the runway. Epochs whose shards are all
// past retention and gone are forgotten.
func (old Config) relayout(want Config, now time.Time, starts []int64) ([]Layout, error) {
	ls := slices.Clone(old.layoutList())
	if n := len(ls); n > 1 {
		pending := ls[n-1].From.UnixMilli()
		if i, _ := slices.BinarySearch(starts, pending); i == len(starts) {
			ls = ls[:n-1] // not taken effect: replaced
		}
	}
	cur := ls[len(ls)-1]
	next := Layout{TableBucket: want.TableBucket, PartitionBucket: want.PartitionBucket}
	if cur.TableBucket == next.TableBucket && cur.PartitionBucket == next.PartitionBucket {
		return trimLayouts(ls), nil
	}
	if cur.TableBucket%next.TableBucket != 0 && next.TableBucket%cur.TableBucket != 0 {
		return nil, store.Errorf(ErrLayoutChange, "index %q: table_bucket %s cannot become %s: one must be a multiple of the other, so that shards of the two layouts meet at a common boundary",
			old.Name, durfmt.Format(cur.TableBucket), durfmt.Format(next.TableBucket))
	}
	// The layouts so far, to walk the runway and name shards with.
	prev := old
	prev.Layouts = ls
	if len(ls) == 1 {
		prev.Layouts = nil
		prev.TableBucket, prev.PartitionBucket = cur.TableBucket, cur.PartitionBucket
	}
	end := prev.shardOf(now.UnixMilli())
	for range old.Runway + 1 {
		end = prev.shardEnd(end)
	}
	if n := len(starts); n > 0 {
		end = max(end, prev.shardEnd(starts[n-1]))
	}
	wide := max(cur.TableBucket, next.TableBucket).Milliseconds()
	next.From = time.UnixMilli((end + wide - 1) / wide * wide).UTC()
	ls = append(ls, next)
	// Forget the epochs before the oldest shard that exists or that
	// retention still covers: their shards are gone.
	oldest := max(now.Add(-max(old.Retention, old.HeldRetention)).UnixMilli(), 0)
	if len(starts) > 0 {
		oldest = min(oldest, starts[0])
	}
	for len(ls) > 1 && ls[1].From.UnixMilli() <= oldest {
		ls = ls[1:]
	}
	return trimLayouts(ls), nil
}

// trimLayouts returns ls as Config.Layouts holds it: the first epoch from
// the Unix epoch, and nil for a single one.
func trimLayouts(ls []Layout) []Layout {
	if len(ls) <= 1 {
		return nil
	}
	ls[0].From = time.Unix(0, 0).UTC()
	return ls
}

// pendingLayout describes the layout change of cfg that has not reached
// its boundary at now, for logs; "" when there is none.
func pendingLayout(cfg Config, now time.Time) string {
	ls := cfg.Layouts
	if n := len(ls); n > 1 && ls[n-1].From.After(now) {
		return layoutChange(ls[n-2], ls[n-1]) + " from " + timefmt.Format(ls[n-1].From)
	}
	return ""
}

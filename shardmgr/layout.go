package shardmgr

import (
	"fmt"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Layout is one epoch of an index's shard layout: from From until the
// next epoch's From, shards are TableBucket wide and aligned to the Unix
// epoch. An index whose table bucket changed keeps one Layout per width
// its shards may still have, so that the manager recognizes, keeps and
// drops the shards of each.
type Layout struct {
	// From is where the layout takes effect: a multiple of its own
	// TableBucket and of the previous layout's, so that no shard of
	// either straddles it. The first layout's From is the Unix epoch.
	From time.Time
	// TableBucket is the width of the layout's shards.
	TableBucket time.Duration
	// Change says what changed at From, for plans ("table_bucket 1h ->
	// 24h"); empty for the first layout.
	Change string
}

// Layouts returns c's layout epochs, oldest first: c.Layouts, or one
// layout of c.TableBucket from the epoch when c has none (an index whose
// layout never changed).
func (c Config) layouts() []Layout {
	if len(c.Layouts) == 0 {
		return []Layout{{From: time.Unix(0, 0).UTC(), TableBucket: c.TableBucket}}
	}
	return c.Layouts
}

// validateLayouts checks c.Layouts: oldest first, the first from the
// epoch, each From aligned to its own and the previous table bucket, the
// last of c.TableBucket.
func (c Config) validateLayouts() error {
	ls := c.Layouts
	if len(ls) == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "%w: index %q: layouts: %s", ErrInvalidConfig, c.Index, fmt.Sprintf(format, args...))
	}
	if ls[0].From.Unix() != 0 {
		return bad("the first layout starts at %s, not at the Unix epoch", timefmt.Format(ls[0].From))
	}
	for i, l := range ls {
		if l.TableBucket <= 0 || l.TableBucket%time.Second != 0 {
			return bad("table bucket %s must be a positive whole number of seconds", durfmt.Format(l.TableBucket))
		}
		if !aligned(l.From, l.TableBucket) {
			return bad("layout from %s is not aligned to its table bucket %s", timefmt.Format(l.From), durfmt.Format(l.TableBucket))
		}
		if i == 0 {
			continue
		}
		prev := ls[i-1]
		if !l.From.After(prev.From) {
			return bad("layout from %s does not follow the one from %s", timefmt.Format(l.From), timefmt.Format(prev.From))
		}
		if !aligned(l.From, prev.TableBucket) {
			return bad("layout from %s is not aligned to the previous table bucket %s", timefmt.Format(l.From), durfmt.Format(prev.TableBucket))
		}
	}
	if last := ls[len(ls)-1]; last.TableBucket != c.TableBucket {
		return bad("the last layout's table bucket %s is not the table bucket %s", durfmt.Format(last.TableBucket), durfmt.Format(c.TableBucket))
	}
	return nil
}

func aligned(t time.Time, tb time.Duration) bool {
	return t.Unix()%int64(tb/time.Second) == 0 && t.Nanosecond() == 0
}

// layoutAt returns the index in ls of the layout in force at t.
func layoutAt(ls []Layout, t time.Time) int {
	i := 0
	for j := 1; j < len(ls); j++ {
		if !t.Before(ls[j].From) {
			i = j
		}
	}
	return i
}

// ShardAt returns the start and width of the shard of c holding t, in the
// layout in force at t.
func ShardAt(c Config, t time.Time) (start time.Time, tableBucket time.Duration) {
	ls := c.layouts()
	tb := ls[layoutAt(ls, t)].TableBucket
	return BucketStart(t, tb), tb
}

// NextShard returns the start of the shard after the one starting at
// start: where that one ends, whichever layout the next one has.
func NextShard(c Config, start time.Time) time.Time {
	_, tb := ShardAt(c, start)
	return start.Add(tb)
}

// TableBuckets returns every table bucket c's shards may have, oldest
// layout first.
func TableBuckets(c Config) []time.Duration {
	var out []time.Duration
	for _, l := range c.layouts() {
		out = append(out, l.TableBucket)
	}
	return out
}

// ParseShard classifies table for c as ParseShardName does for one table
// bucket, across c's layouts: a name is a shard of the index when its
// start is aligned to the table bucket of the layout in force there. It
// returns the shard's start and width.
func ParseShard(c Config, table string) (start time.Time, tableBucket time.Duration, kind NameKind) {
	ls := c.layouts()
	// One second parses any canonical start; the layout then says whether
	// it is aligned.
	start, kind = ParseShardName(c.Index, time.Second, table)
	if kind != ShardOf {
		return time.Time{}, 0, kind
	}
	tb := ls[layoutAt(ls, start)].TableBucket
	if !aligned(start, tb) {
		return time.Time{}, 0, Unrecognized
	}
	return start, tb, ShardOf
}

// layoutChange returns what changed at start, when a layout other than
// the first takes effect exactly there; "" otherwise.
func layoutChange(c Config, start time.Time) string {
	ls := c.layouts()
	i := layoutAt(ls, start)
	if i == 0 || !ls[i].From.Equal(start) {
		return ""
	}
	if ls[i].Change != "" {
		return ls[i].Change
	}
	return fmt.Sprintf("table_bucket %s -> %s", durfmt.Format(ls[i-1].TableBucket), durfmt.Format(ls[i].TableBucket))
}

package shardmgr

import (
	"fmt"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Cold shards. With CapacityPolicy.ColdAfter set, on a backend whose
// tables have classes (Config.Classes, DynamoDB's Standard and
// Standard-IA), a shard whose end is at least ColdAfter ago (every row in
// it is older than that) belongs in the infrequent-access class, and every
// other shard in the standard one: a shard that turned cold moves to
// Standard-IA, and one that is warm again (ColdAfter raised) moves back.
// A change the provider's limit would refuse is deferred, with the moment
// it is allowed in its reason, the way capacity switches are.

// OpSetClass moves a shard to another table class (Action.Class).
const OpSetClass Op = "set_class"

// classActions returns the class change sh needs, if any.
func classActions(cfg Config, now time.Time, sh Shard, start time.Time) []Action {
	end := NextShard(cfg, start)
	want, reason := store.ClassStandard, fmt.Sprintf("warm: ended %s ago, less than cold_after %s", durfmt.Format(now.Sub(end).Truncate(time.Second)), durfmt.Format(cfg.Capacity.ColdAfter))
	if !now.Before(end.Add(cfg.Capacity.ColdAfter)) {
		want, reason = store.ClassInfrequentAccess, fmt.Sprintf("cold: ended %s ago, at least cold_after %s", durfmt.Format(now.Sub(end).Truncate(time.Second)), durfmt.Format(cfg.Capacity.ColdAfter))
	}
	if !now.After(end) {
		reason = fmt.Sprintf("warm: holds or follows now, less than cold_after %s old", durfmt.Format(cfg.Capacity.ColdAfter))
	}
	if sh.Class.Or() == want {
		return nil
	}
	a := Action{Op: OpSetClass, Table: sh.Table, Start: start, End: end, Class: want, Reason: reason}
	if n, next := nextClassChange(cfg.Classes, sh, now); next.After(now) {
		r := cfg.Classes
		a.Deferred = true
		a.Reason = fmt.Sprintf("deferred: %d table class changes in the last %s (limit %d, %s), next allowed at %s (%s)",
			n, durfmt.Format(r.Window), r.MaxChanges, r.Provider, timefmt.Format(next), reason)
	}
	return []Action{a}
}

// nextClassChange returns how many class changes of sh count at now and
// when the next one is allowed, by the manager's record or the store's,
// whichever defers it longer.
func nextClassChange(r store.ClassRules, sh Shard, now time.Time) (int, time.Time) {
	n, next := r.Next(sh.History.ClassChanges, now)
	if m, t := r.Next(sh.ClassChanges, now); t.After(next) || (t.Equal(next) && m > n) {
		n, next = m, t
	}
	return n, next
}

package store

import (
	"slices"
	"time"
)

// SwitchRules are a provider's limits on a table's capacity-mode switches.
// They are the one model of those limits: a backend reports its provider's
// in Capabilities().Switches and checks SetCapacity against them, and the
// shard manager's planner defers, with the same rules, every switch the
// provider would refuse, so that a switch the planner lets through is
// never refused by the store.
//
// Switches to provisioned capacity are never limited (DynamoDB and Amazon
// Keyspaces allow them at any time); switches from provisioned to
// on-demand are, and with CreationCounts a table created on-demand counts
// its creation as one.
type SwitchRules struct {
	// Provider names the provider in messages.
	Provider string `json:"provider,omitempty"`
	// MaxToOnDemand is how many switches from provisioned to on-demand a
	// table may make within any Window. Zero means no limit (a backend
	// without capacity modes).
	MaxToOnDemand int           `json:"max_to_on_demand,omitempty"`
	Window        time.Duration `json:"window,omitempty"`
	// CreationCounts: creating a table on-demand counts as a switch to
	// on-demand at its creation time.
	CreationCounts bool `json:"creation_counts,omitempty"`
}

// The providers' rules.
var (
	// DynamoDBSwitches: "You can switch tables from provisioned capacity
	// mode to on-demand mode up to four times in a 24-hour rolling window.
	// You can switch tables from on-demand mode to provisioned capacity
	// mode at any time." (Amazon DynamoDB Developer Guide, "Considerations
	// when switching capacity modes in DynamoDB").
	DynamoDBSwitches = SwitchRules{Provider: "DynamoDB", MaxToOnDemand: 4, Window: 24 * time.Hour}
	// KeyspacesSwitches: a table may switch to provisioned at any time; from
	// provisioned to on-demand only once in 24 hours; and a table created
	// on-demand may switch back to on-demand only 24 hours after its
	// creation timestamp (Amazon Keyspaces Developer Guide, "Change
	// capacity mode"). Counting the creation as a switch models both with
	// one limit of one per 24 hours.
	KeyspacesSwitches = SwitchRules{Provider: "Amazon Keyspaces", MaxToOnDemand: 1, Window: 24 * time.Hour, CreationCounts: true}
)

// Limited reports whether the rules limit anything.
func (r SwitchRules) Limited() bool { return r.MaxToOnDemand > 0 && r.Window > 0 }

// Recent returns the times of history within the window ending at now,
// (now - Window, now], in order: the switches that still count. A switch
// exactly Window old has left it.
func (r SwitchRules) Recent(history []time.Time, now time.Time) []time.Time {
	if !r.Limited() {
		return nil
	}
	var out []time.Time
	for _, t := range history {
		if t.After(now.Add(-r.Window)) && !t.After(now) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// NextToOnDemand returns how many switches of history count at now and
// when a switch from provisioned to on-demand is allowed: now when it is
// allowed now, otherwise the moment enough of them leave the window.
func (r SwitchRules) NextToOnDemand(history []time.Time, now time.Time) (int, time.Time) {
	recent := r.Recent(history, now)
	if !r.Limited() || len(recent) < r.MaxToOnDemand {
		return len(recent), now
	}
	return len(recent), recent[len(recent)-r.MaxToOnDemand].Add(r.Window)
}

// Allowed is NextToOnDemand over a history kept as Unix milliseconds, as
// the remote backends keep it in their catalogs. It returns the history
// that still counts (older entries are forgotten) and whether one more
// switch at now is allowed.
func (r SwitchRules) Allowed(history []int64, now time.Time) ([]int64, bool) {
	ts := SwitchTimes(history)
	_, next := r.NextToOnDemand(ts, now)
	var kept []int64
	for _, t := range r.Recent(ts, now) {
		kept = append(kept, t.UnixMilli())
	}
	return kept, !next.After(now)
}

// SwitchTimes converts a switch history kept as Unix milliseconds; nil for
// an empty one.
func SwitchTimes(ms []int64) []time.Time {
	if len(ms) == 0 {
		return nil
	}
	ts := make([]time.Time, len(ms))
	for i, m := range ms {
		ts[i] = time.UnixMilli(m).UTC()
	}
	return ts
}

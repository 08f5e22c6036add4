package shardmgr

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Op is what an Action does.
type Op string

// Ops.
const (
	OpCreate      Op = "create"
	OpDrop        Op = "drop"
	OpSetCapacity Op = "set_capacity"
	OpPrewarm     Op = "prewarm"
)

// Shard is one observed table under the index's prefix. Plan parses the
// name itself, so observed tables that are not shards are reported instead
// of being trusted.
type Shard struct {
	Table    string
	Capacity store.Capacity
	// History is what the manager recorded about the table.
	History History
	// Switches are the switches the store recorded for the table
	// (store.TableInfo.Switches); the planner counts whichever record
	// holds more, so that a switch made around the manager is counted too.
	Switches []time.Time
	// Class is the table's class ("" the default) and ClassChanges the
	// class changes the store recorded (store.TableInfo).
	Class        store.TableClass
	ClassChanges []time.Time
}

// History is the manager's record of one shard's capacity changes, kept in
// the ebb_meta table because the provider's limits count them.
type History struct {
	// Switches are the times the table went from provisioned to on-demand,
	// and, where the backend counts it (store.SwitchRules.CreationCounts),
	// the time the manager created it on-demand, oldest first.
	Switches []time.Time `json:"switches,omitempty"`
	// PrewarmedAt is when the table was provisioned at peak to pre-warm it
	// (backends without warm throughput); zero when it was not.
	PrewarmedAt time.Time `json:"prewarmed_at,omitzero"`
	// ClassChanges are the times the manager changed the table's class,
	// oldest first, which the provider's class rules count.
	ClassChanges []time.Time `json:"class_changes,omitempty"`
}

// LastRun is the manager's record of the last run it applied for an
// index.
type LastRun struct {
	// At is the clock reading of that run; zero when there was none.
	At time.Time `json:"at,omitzero"`
}

// Action is one step of a Plan.
type Action struct {
	Op    Op
	Table string
	// Start and End bound the shard's time range [Start, End).
	Start, End time.Time
	// Reason says why, for people reading the plan.
	Reason string
	// Capacity is the target of OpSetCapacity and OpPrewarm.
	Capacity store.Capacity
	// Class is the target of OpSetClass.
	Class store.TableClass
	// Switch marks a change from provisioned to on-demand, which the
	// provider limits and the manager records.
	Switch bool
	// Deferred actions are reported but not applied: a guard or a limit
	// holds them back, as Reason says.
	Deferred bool
	// Destroys is what a drop destroys, as the store reports it, when
	// RunOptions.DropStats asked for it; nil otherwise.
	Destroys *store.TableStats
}

// Plan is what one run would do for one index.
type Plan struct {
	Index string
	Now   time.Time
	// Schema is the spec shards are created with (Config.Schema).
	Schema store.TableSpec
	// Actions in the order Apply runs them: creates (hot shard first), then
	// capacity changes, then class changes, then drops (oldest first).
	Actions []Action
	// Unrecognized are tables with the index's prefix that are not its
	// shards; they are left alone.
	Unrecognized []string
	// ClockJump is set when drops were deferred because the clock moved
	// forward more than Guards.MaxClockJump since the last run; such a run
	// is not recorded, so the guard holds until an operator confirms.
	ClockJump bool
	// Transitions are the index's layout changes (Config.Layouts after
	// the first), oldest first, so that a plan shows a change before the
	// runway reaches its first shard too.
	Transitions []Transition
}

// Transition is one layout change as a plan reports it.
type Transition struct {
	// From is where the new layout takes effect; Table is its first
	// shard, and Created whether that shard exists (after this plan is
	// applied, for one that creates it).
	From    time.Time
	Table   string
	Change  string
	Created bool
}

// Pending returns the actions that are not deferred.
func (p Plan) Pending() []Action {
	var out []Action
	for _, a := range p.Actions {
		if !a.Deferred {
			out = append(out, a)
		}
	}
	return out
}

// NewPlan computes what to do for cfg at now, given the tables observed
// under the index's prefix and the last recorded run. It is a pure
// function: the same inputs always give the same plan.
//
// The desired shards are every shard that is not expired (end + retention
// > now) up to Runway shards after the hot one. A missing desired shard is
// created; an existing shard whose end + retention <= now is dropped,
// subject to the guards; with a capacity policy, each remaining shard's
// capacity is moved towards its target, subject to the switch limit; with
// ColdAfter, each remaining shard's class follows its age (class.go).
func NewPlan(cfg Config, now time.Time, observed []Shard, last LastRun) Plan {
	cfg = cfg.withDefaults()
	plan := Plan{Index: cfg.Index, Now: now, Schema: cfg.Schema}

	existing := map[int64]Shard{} // by start, Unix seconds
	for _, sh := range observed {
		start, _, kind := ParseShard(cfg, sh.Table)
		switch kind {
		case ShardOf:
			existing[start.Unix()] = sh
		case Unrecognized:
			plan.Unrecognized = append(plan.Unrecognized, sh.Table)
		}
	}
	slices.Sort(plan.Unrecognized)

	hot, _ := ShardAt(cfg, now)
	oldest := now.Add(-cfg.Retention)
	if oldest.Before(time.Unix(0, 0)) {
		oldest = time.Unix(0, 0).UTC()
	}
	first, _ := ShardAt(cfg, oldest)
	last1 := hot
	for range cfg.Runway {
		last1 = NextShard(cfg, last1)
	}

	// Creates: hot shard first, then the runway nearest first, then the
	// past newest first, so that the shards writes need soonest exist
	// soonest if applying is slow or interrupted.
	var creates []Action
	for s := first; !s.After(last1); s = NextShard(cfg, s) {
		if _, ok := existing[s.Unix()]; ok {
			continue
		}
		end := NextShard(cfg, s)
		creates = append(creates, Action{
			Op: OpCreate, Table: ShardName(cfg.Index, s), Start: s, End: end,
			Reason: createReason(cfg, s, hot, end),
		})
	}
	slices.SortStableFunc(creates, func(a, b Action) int {
		return createRank(a.Start, hot) - createRank(b.Start, hot)
	})
	plan.Actions = append(plan.Actions, creates...)

	// Drops, oldest first, behind the guards.
	starts := make([]int64, 0, len(existing))
	for s := range existing {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	jump := !last.At.IsZero() && now.Sub(last.At) > cfg.Guards.MaxClockJump
	var drops []Action
	dropped := map[int64]bool{}
	for _, s := range starts {
		start := time.Unix(s, 0).UTC()
		end := NextShard(cfg, start)
		if end.Add(cfg.Retention).After(now) {
			continue
		}
		a := Action{
			Op: OpDrop, Table: existing[s].Table, Start: start, End: end,
			Reason: fmt.Sprintf("expired: end %s + retention %s <= now", timefmt.Format(end), durfmt.Format(cfg.Retention)),
		}
		if cfg.DropKeepsSnapshot {
			a.Reason += "; the cluster keeps an auto_snapshot of the dropped table (auto_snapshot: true by default), so no disk is freed until `nodetool clearsnapshot` runs or auto_snapshot is off"
		}
		if cfg.Archive != "" {
			a.Reason += "; archived to " + cfg.Archive + " and verified first"
		}
		switch {
		case jump:
			plan.ClockJump = true
			a.Deferred = true
			a.Reason = fmt.Sprintf("deferred: clock moved forward %s since the last run at %s (guard %s); confirm with allow_clock_jump",
				durfmt.Format(now.Sub(last.At)), timefmt.Format(last.At), durfmt.Format(cfg.Guards.MaxClockJump))
		case len(drops)-countDeferred(drops) >= cfg.Guards.MaxDropsPerRun:
			a.Deferred = true
			a.Reason = fmt.Sprintf("deferred: at most %d drops per run (%s)", cfg.Guards.MaxDropsPerRun, a.Reason)
		default:
			dropped[s] = true
		}
		drops = append(drops, a)
	}

	if cfg.Capacity.Enabled() {
		var caps []Action
		for s := first; !s.After(last1); s = NextShard(cfg, s) {
			if _, ok := existing[s.Unix()]; !ok {
				caps = append(caps, capacityActions(cfg, now, hot, Shard{Table: ShardName(cfg.Index, s)}, s)...)
			}
		}
		for _, s := range starts {
			if !dropped[s] {
				caps = append(caps, capacityActions(cfg, now, hot, existing[s], time.Unix(s, 0).UTC())...)
			}
		}
		slices.SortStableFunc(caps, func(a, b Action) int { return a.Start.Compare(b.Start) })
		plan.Actions = append(plan.Actions, caps...)
	}
	if cfg.Capacity.ColdAfter > 0 && cfg.Classes.Supported() {
		for _, s := range starts {
			if !dropped[s] {
				plan.Actions = append(plan.Actions, classActions(cfg, now, existing[s], time.Unix(s, 0).UTC())...)
			}
		}
	}
	plan.Actions = append(plan.Actions, drops...)
	for _, l := range cfg.layouts()[1:] {
		_, created := existing[l.From.Unix()]
		for _, a := range creates {
			created = created || a.Start.Equal(l.From)
		}
		plan.Transitions = append(plan.Transitions, Transition{
			From: l.From, Table: ShardName(cfg.Index, l.From), Change: layoutChange(cfg, l.From), Created: created,
		})
	}
	return plan
}

func countDeferred(as []Action) int {
	n := 0
	for _, a := range as {
		if a.Deferred {
			n++
		}
	}
	return n
}

// createRank orders creates: hot, then future nearest first, then past
// newest first.
func createRank(s, hot time.Time) int {
	d := int(s.Sub(hot) / time.Second)
	if d >= 0 {
		return d
	}
	return 1<<40 - d
}

// createReason says why the shard [s, end) is created and, for the first
// shard of a changed layout, which change takes effect there.
func createReason(cfg Config, s, hot, end time.Time) string {
	var why string
	switch {
	case s.Equal(hot):
		why = "hot shard: holds now"
	case s.After(hot):
		n := 0
		for t := hot; t.Before(s); t = NextShard(cfg, t) {
			n++
		}
		why = fmt.Sprintf("runway: starts in %d bucket%s", n, plural(n))
	default:
		why = fmt.Sprintf("inside retention until %s", timefmt.Format(end.Add(cfg.Retention)))
	}
	if change := layoutChange(cfg, s); change != "" {
		why += fmt.Sprintf("; first shard of the new layout (%s from %s)", change, timefmt.Format(s))
	}
	return why
}

// capacityActions returns the capacity change sh needs, if any.
func capacityActions(cfg Config, now, hot time.Time, sh Shard, start time.Time) []Action {
	p := cfg.Capacity
	cur := sh.Capacity
	base := Action{Table: sh.Table, Start: start, End: NextShard(cfg, start)}
	set := func(op Op, c store.Capacity, reason string) []Action {
		a := base
		a.Op, a.Capacity, a.Reason = op, c, reason
		if cur.Mode == store.Provisioned && c.Mode == store.OnDemand {
			a.Switch = true
			if n, next := nextSwitch(cfg.Switches, sh, now); next.After(now) {
				r := cfg.Switches
				limit := fmt.Sprintf("limit %d", r.MaxToOnDemand)
				if r.Provider != "" {
					limit += ", " + r.Provider
				}
				if r.CreationCounts {
					limit += ", counting an on-demand creation"
				}
				a.Deferred = true
				a.Reason = fmt.Sprintf("deferred: %d switches to on-demand in the last %s (%s), next allowed at %s (%s)",
					n, durfmt.Format(r.Window), limit, timefmt.Format(next), reason)
			}
		}
		return []Action{a}
	}
	onDemand := store.Capacity{Mode: store.OnDemand}
	switch {
	case start.Equal(hot):
		want := store.Capacity{Mode: store.Provisioned, ReadUnits: p.HotRead, WriteUnits: p.HotWrite}
		if cur.Mode == store.Provisioned && cur.ReadUnits == want.ReadUnits && cur.WriteUnits == want.WriteUnits {
			return nil
		}
		return set(OpSetCapacity, want, "hot shard: provisioned")
	case start.Equal(NextShard(cfg, hot)):
		if cfg.WarmThroughput {
			want := store.Capacity{Mode: store.OnDemand, WarmRead: p.PeakRead, WarmWrite: p.PeakWrite}
			if cur.Mode == store.OnDemand && cur.WarmRead >= p.PeakRead && cur.WarmWrite >= p.PeakWrite {
				return nil
			}
			return set(OpPrewarm, want, "next shard: pre-warm to peak throughput")
		}
		if sh.History.PrewarmedAt.IsZero() {
			want := store.Capacity{Mode: store.Provisioned, ReadUnits: p.PeakRead, WriteUnits: p.PeakWrite}
			return set(OpPrewarm, want, fmt.Sprintf("next shard: pre-warm provisioned at peak for %s, then on-demand", durfmt.Format(p.PrewarmHold)))
		}
		if cur.Mode == store.Provisioned && !now.Before(sh.History.PrewarmedAt.Add(p.PrewarmHold)) {
			return set(OpSetCapacity, onDemand, fmt.Sprintf("next shard: pre-warmed at %s, back to on-demand", timefmt.Format(sh.History.PrewarmedAt)))
		}
		return nil
	}
	if cur.Mode == store.Provisioned {
		state := "past"
		if start.After(hot) {
			state = "future"
		}
		return set(OpSetCapacity, onDemand, state+" shard: on-demand")
	}
	return nil
}

// nextSwitch returns how many switches of sh count at now under the rules
// and when the next switch to on-demand is allowed (now when it is), by
// the manager's record or the store's, whichever defers it longer.
func nextSwitch(r store.SwitchRules, sh Shard, now time.Time) (int, time.Time) {
	n, next := r.NextToOnDemand(sh.History.Switches, now)
	if m, t := r.NextToOnDemand(sh.Switches, now); t.After(next) || (t.Equal(next) && m > n) {
		n, next = m, t
	}
	return n, next
}

// String renders the plan like a Terraform plan: one line per action,
// "+" create, "-" drop, "~" capacity, "!" deferred, "?" unrecognized.
func (p Plan) String() string {
	var b strings.Builder
	for _, a := range p.Actions {
		b.WriteString(FormatAction(string(a.Op), a.Table, capacityTarget(a), a.Reason, a.Deferred))
		b.WriteByte('\n')
	}
	for _, t := range p.Unrecognized {
		fmt.Fprintf(&b, "? %-13s %s  (unrecognized: not a shard of %s; left alone)\n", "ignore", t, p.Index)
	}
	for _, t := range p.Transitions {
		b.WriteString(FormatTransition(t.Change, t.From, t.Table, t.Created))
		b.WriteByte('\n')
	}
	if len(p.Actions) == 0 && len(p.Unrecognized) == 0 {
		b.WriteString("no changes\n")
	}
	return b.String()
}

func capacityTarget(a Action) string {
	if a.Op == OpSetCapacity || a.Op == OpPrewarm {
		return FormatCapacity(a.Capacity)
	}
	if a.Op == OpSetClass {
		return string(a.Class)
	}
	return ""
}

// FormatAction renders one plan line; the CLI renders plans it receives
// over HTTP with it too.
func FormatAction(op, table, capacity, reason string, deferred bool) string {
	sym := "~"
	switch {
	case deferred:
		sym = "!"
	case op == string(OpCreate):
		sym = "+"
	case op == string(OpDrop):
		sym = "-"
	}
	line := fmt.Sprintf("%s %-13s %s", sym, op, table)
	if capacity != "" {
		line += " -> " + capacity
	}
	return line + "  (" + reason + ")"
}

// FormatTransition renders a layout change of a plan; the CLI renders
// plans it receives over HTTP with it too.
func FormatTransition(change string, from time.Time, table string, created bool) string {
	state := "not created yet: shards before it keep the old layout"
	if created {
		state = "created"
	}
	return fmt.Sprintf("> %-13s %s  (%s from %s; first shard %s)", "layout", table, change, timefmt.Format(from), state)
}

// FormatCapacity renders a capacity: "on_demand",
// "on_demand(warm read=R write=W)" or "provisioned(read=R write=W)".
func FormatCapacity(c store.Capacity) string {
	if c.Mode == store.Provisioned {
		return fmt.Sprintf("provisioned(read=%d write=%d)", c.ReadUnits, c.WriteUnits)
	}
	if c.WarmRead > 0 || c.WarmWrite > 0 {
		return fmt.Sprintf("on_demand(warm read=%d write=%d)", c.WarmRead, c.WarmWrite)
	}
	return "on_demand"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

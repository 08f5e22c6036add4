package shardmgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
)

// metaKind is the ebb_meta kind under which the manager keeps one state
// document per index.
const metaKind = "shardmgr"

// state is the manager's durable record for one index.
type state struct {
	LastRun LastRun            `json:"last_run"`
	Tables  map[string]History `json:"tables,omitempty"`
}

// Observe lists the tables under the index's prefix and attaches the
// manager's records: the input of NewPlan.
func Observe(ctx context.Context, st store.Store, index string) ([]Shard, LastRun, error) {
	o, err := observeOne(ctx, st, index)
	if err != nil {
		return nil, LastRun{}, err
	}
	return o.shards, o.last, nil
}

func loadState(ctx context.Context, st store.Store, index string) (state, error) {
	var s state
	doc, err := getState(ctx, st, index)
	if err != nil || doc == nil {
		return s, err
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		return s, fmt.Errorf("shardmgr: state of %s is corrupt: %w", index, err)
	}
	return s, nil
}

// getState reads one document of the manager's kind; nil when there is
// none.
func getState(ctx context.Context, st store.Store, key string) ([]byte, error) {
	doc, err := store.Meta{S: st}.Get(ctx, metaKind, key)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("shardmgr: load state of %s: %w", key, err)
	}
	return doc, nil
}

// Result is the outcome of one applied action.
type Result struct {
	Action Action
	// Err is nil when the action was applied.
	Err error
}

// Apply carries out the plan's pending actions in order. Each action is
// independent: one that fails is reported in its Result and the others
// still run. Every action is idempotent (creating an existing shard with
// the same spec, dropping a missing one and setting the capacity a table
// already has are no-ops), so applying a plan twice is safe. A non-nil
// fence is called before each action, and an action whose fence fails is
// refused with an error wrapping ErrFenced.
func Apply(ctx context.Context, st store.Store, plan Plan, fence func(context.Context) error) []Result {
	return apply(ctx, st, plan, fence, nil, nil)
}

// apply is Apply with a hook called before each drop (Options.BeforeDrop),
// after the drop's fence, with what Options.PrepareDrop made ready for it
// (prepared, by table); the hook's error holds the drop.
func apply(ctx context.Context, st store.Store, plan Plan, fence func(context.Context) error,
	prepared map[string]Prepared, beforeDrop func(context.Context, string, Action, Prepared) error) []Result {
	var out []Result
	for _, a := range plan.Actions {
		if a.Deferred {
			continue
		}
		if fence != nil {
			if err := fence(ctx); err != nil {
				out = append(out, Result{Action: a, Err: fmt.Errorf("%s %s: %w: %w", a.Op, a.Table, ErrFenced, err)})
				continue
			}
		}
		var err error
		switch a.Op {
		case OpCreate:
			spec := plan.Schema
			spec.Name = a.Table
			err = st.CreateTable(ctx, spec)
		case OpDrop:
			if beforeDrop != nil {
				err = beforeDrop(ctx, plan.Index, a, prepared[a.Table])
			}
			if err == nil {
				err = st.DropTable(ctx, a.Table)
			}
		case OpSetCapacity, OpPrewarm:
			err = st.SetCapacity(ctx, a.Table, a.Capacity)
		case OpSetClass:
			cs, ok := store.As[store.ClassSetter](st)
			if !ok {
				err = store.Errorf(store.ErrInvalid, "the %s backend has no table classes", st.Capabilities().Backend)
				break
			}
			err = cs.SetTableClass(ctx, a.Table, a.Class)
		default:
			err = store.Errorf(store.ErrInvalid, "unknown op %q", a.Op)
		}
		if err != nil {
			err = fmt.Errorf("%s %s: %w", a.Op, a.Table, err)
		}
		out = append(out, Result{Action: a, Err: err})
	}
	return out
}

// Failed joins the errors of failed results; nil when every action was
// applied.
func Failed(results []Result) error {
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errors.Join(errs...)
}

// record saves what a run did: capacity switches, pre-warms and class
// changes for the provider's limits, and the run's time for the clock-jump guard (unless
// the guard tripped and was not overridden, so that it keeps holding).
// Within a pass (inPass) the index's document is written only when what
// it holds changed or an action was applied: the pass record then keeps
// the run's time for every index at once, so a pass with nothing to do
// writes nothing per index.
func record(ctx context.Context, st store.Store, cfg Config, plan Plan, results []Result, o observed, allowJump, inPass bool) error {
	cfg = cfg.withDefaults()
	s := o.state
	before, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("shardmgr: encode state of %s: %w", cfg.Index, err)
	}
	observed := o.shards
	applied := false
	for _, r := range results {
		applied = applied || r.Err == nil
	}
	live := map[string]bool{}
	for _, sh := range observed {
		live[sh.Table] = true
	}
	tables := map[string]History{}
	for name, h := range s.Tables {
		if live[name] {
			tables[name] = h
		}
	}
	now := plan.Now
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		a := r.Action
		h := tables[a.Table]
		switch {
		case a.Op == OpDrop:
			delete(tables, a.Table)
			continue
		case a.Switch, a.Op == OpCreate && cfg.Switches.CreationCounts:
			h.Switches = append(h.Switches, now)
		}
		if a.Op == OpPrewarm && a.Capacity.Mode == store.Provisioned {
			h.PrewarmedAt = now
		}
		if a.Op == OpSetClass {
			h.ClassChanges = append(h.ClassChanges, now)
		}
		if a.Op == OpSetCapacity || a.Op == OpPrewarm || a.Op == OpCreate || a.Op == OpSetClass {
			tables[a.Table] = h
		}
	}
	// Switches and class changes older than their windows no longer count
	// against the limits.
	for name, h := range tables {
		h.Switches = cfg.Switches.Recent(h.Switches, now)
		h.ClassChanges = cfg.Classes.Recent(h.ClassChanges, now)
		if len(h.Switches) == 0 && h.PrewarmedAt.IsZero() && len(h.ClassChanges) == 0 {
			delete(tables, name)
			continue
		}
		tables[name] = h
	}
	s.Tables = tables
	if inPass && !applied && !allowJump {
		if doc, err := json.Marshal(s); err == nil && string(doc) == string(before) {
			return nil
		}
	}
	if !plan.ClockJump || allowJump {
		s.LastRun.At = now
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("shardmgr: encode state of %s: %w", cfg.Index, err)
	}
	if err := (store.Meta{S: st}).Put(ctx, metaKind, cfg.Index, doc); err != nil {
		return fmt.Errorf("shardmgr: save state of %s: %w", cfg.Index, err)
	}
	return nil
}

// Forget removes the manager's records of an index (when it is deleted).
func Forget(ctx context.Context, st store.Store, index string) error {
	err := store.Meta{S: st}.Delete(ctx, metaKind, index)
	if errors.Is(err, store.ErrTableNotFound) {
		return nil
	}
	return err
}

// runwayEnd returns the end of the last shard that exists after results
// were applied to observed, or the zero time when none does.
func runwayEnd(cfg Config, observed []Shard, results []Result) time.Time {
	starts := map[int64]bool{}
	for _, sh := range observed {
		if start, _, kind := ParseShard(cfg, sh.Table); kind == ShardOf {
			starts[start.Unix()] = true
		}
	}
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		switch r.Action.Op {
		case OpCreate:
			starts[r.Action.Start.Unix()] = true
		case OpDrop:
			delete(starts, r.Action.Start.Unix())
		}
	}
	var end time.Time
	for s := range starts {
		if e := NextShard(cfg, time.Unix(s, 0).UTC()); e.After(end) {
			end = e
		}
	}
	return end
}

package shardmgr

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// rulesStore enforces a provider's switch rules over a backend that has
// none, as Keyspaces does: it records each table's on-demand creation and
// switches to on-demand, refuses with store.ErrCapacityLimit what the
// rules forbid, and reports its record in Tables, as store/cql does.
type rulesStore struct {
	store.Store
	rules store.SwitchRules
	now   func() time.Time

	mu       sync.Mutex
	history  map[string][]time.Time
	refusals int
}

func (r *rulesStore) CreateTable(ctx context.Context, spec store.TableSpec) error {
	if err := r.Store.CreateTable(ctx, spec); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.history[spec.Name]; !ok && r.rules.CreationCounts {
		r.history[spec.Name] = []time.Time{r.now()}
	}
	return nil
}

func (r *rulesStore) SetCapacity(ctx context.Context, table string, c store.Capacity) error {
	infos, err := r.Store.Tables(ctx, table)
	if err != nil || len(infos) == 0 {
		return store.ErrTableNotFound
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if infos[0].Capacity.Mode == store.Provisioned && c.Mode == store.OnDemand {
		if _, next := r.rules.NextToOnDemand(r.history[table], r.now()); next.After(r.now()) {
			r.refusals++
			return store.Errorf(store.ErrCapacityLimit, "%s: next switch to on-demand at %s", table, next)
		}
		r.history[table] = append(r.history[table], r.now())
	}
	return r.Store.SetCapacity(ctx, table, c)
}

func (r *rulesStore) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	infos, err := r.Store.Tables(ctx, prefix)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range infos {
		infos[i].Switches = r.history[infos[i].Spec.Name]
	}
	return infos, err
}

// TestKeyspacesPrewarmBackToOnDemandDeferred follows a shard pre-warmed by
// provisioning it at peak on Keyspaces' rules: the hourly "back to
// on-demand" after the hold is deferred (not failed) until 24 hours after
// the shard's on-demand creation, and then applied; the store refuses
// nothing the plan applies.
func TestKeyspacesPrewarmBackToOnDemandDeferred(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		created := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
		clock := storetest.NewClock(created)
		st := &rulesStore{Store: open(t, clock.Now), rules: store.KeyspacesSwitches, now: clock.Now, history: map[string][]time.Time{}}
		// 48 h shards: [Mar 4, Mar 6) is hot, [Mar 6, Mar 8) the next one.
		cfg := Config{Index: "ev", TableBucket: 48 * time.Hour, Retention: 96 * time.Hour, Runway: 1, Schema: testSchema,
			Capacity: CapacityPolicy{HotRead: 10, HotWrite: 100, PeakRead: 40, PeakWrite: 400},
			Switches: st.rules}
		const next = "ev_1772755200"
		m, _ := newManager(t, st, clock.Now, cfg)
		if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if c := tableNames(t, st, "ev_")[next]; c.Mode != store.Provisioned || c.WriteUnits != 400 {
			t.Fatalf("next shard %+v, want provisioned at peak", c)
		}
		for _, h := range []time.Duration{1, 2, 6, 12, 23} {
			clock.Set(created.Add(h*time.Hour + time.Minute))
			plan, _, err := m.Reconcile(ctx, cfg, RunOptions{})
			if err != nil {
				t.Fatalf("+%dh: %v", h, err)
			}
			var deferred []string
			for _, a := range plan.Actions {
				if a.Deferred {
					deferred = append(deferred, FormatAction(string(a.Op), a.Table, FormatCapacity(a.Capacity), a.Reason, true))
				}
			}
			if h >= 1 && (len(deferred) != 1 || !strings.Contains(deferred[0], next) ||
				!strings.Contains(deferred[0], "next allowed at 2026-03-05T12:00:00Z")) {
				t.Fatalf("+%dh: deferred %q, want the switch of %s deferred until 2026-03-05T12:00:00Z", h, deferred, next)
			}
			if c := tableNames(t, st, "ev_")[next]; c.Mode != store.Provisioned {
				t.Fatalf("+%dh: next shard %+v, want still provisioned", h, c)
			}
		}
		clock.Set(created.Add(24 * time.Hour))
		plan, _, err := m.Reconcile(ctx, cfg, RunOptions{})
		if err != nil {
			t.Fatalf("+24h: %v", err)
		}
		if c := tableNames(t, st, "ev_")[next]; c.Mode != store.OnDemand {
			t.Fatalf("+24h: next shard %+v, want on-demand; plan:\n%s", c, plan)
		}
		if st.refusals != 0 {
			t.Fatalf("the store refused %d switches the plan applied", st.refusals)
		}
	})
}

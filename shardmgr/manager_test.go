package shardmgr

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testSchema = store.TableSpec{
	PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}},
	Values:       []store.Column{{Name: "v", Type: store.TypeBytes}},
}

func tableNames(t testing.TB, st store.Store, prefix string) map[string]store.Capacity {
	t.Helper()
	infos, err := st.Tables(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Capacity{}
	for _, i := range infos {
		out[i.Spec.Name] = i.Capacity
	}
	return out
}

func newManager(t testing.TB, st store.Store, clock func() time.Time, cfgs ...Config) (*Manager, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(Options{
		Store:      st,
		Configs:    func(context.Context) ([]Config, error) { return cfgs, nil },
		Interval:   time.Minute,
		Now:        clock,
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestReconcileCreatesDropsAndIsIdempotent(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
		st := open(t, clock.Now)
		cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 48 * time.Hour, Runway: 2, Schema: testSchema,
			Capacity: CapacityPolicy{HotRead: 10, HotWrite: 100, PeakRead: 40, PeakWrite: 400},
			// A provider's limit, so that the switch below is recorded.
			Switches: store.DynamoDBSwitches}
		// A shard of another index with a longer name must survive.
		other := testSchema
		other.Name = "ev_eu_1772582400"
		if err := st.CreateTable(ctx, other); err != nil {
			t.Fatal(err)
		}
		m, reg := newManager(t, st, clock.Now, cfg)

		plan, results, err := m.Reconcile(ctx, cfg, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Shards from BucketStart(now-48h) = Mar 2 to hot (Mar 4) + 2 = Mar 6.
		want := []string{"ev_1772409600", "ev_1772496000", "ev_1772582400", "ev_1772668800", "ev_1772755200"}
		got := tableNames(t, st, "ev_")
		for _, name := range want {
			if _, ok := got[name]; !ok {
				t.Errorf("%s missing after reconcile; have %v", name, got)
			}
		}
		if len(got) != len(want)+1 {
			t.Errorf("tables %v, want %v plus ev_eu_1772582400", got, want)
		}
		if c := got["ev_1772582400"]; c.Mode != store.Provisioned || c.WriteUnits != 100 {
			t.Errorf("hot shard capacity %+v, want provisioned 10/100", c)
		}
		if c := got["ev_1772668800"]; c.Mode != store.Provisioned || c.WriteUnits != 400 {
			t.Errorf("next shard capacity %+v, want provisioned at peak", c)
		}
		if len(results) != len(plan.Pending()) {
			t.Errorf("%d results for %d pending actions", len(results), len(plan.Pending()))
		}
		if n := metricValue(t, reg, "ebb_reconcile_actions_total", "create"); n != 5 {
			t.Errorf("create actions counted %v, want 5", n)
		}

		// Applying again changes nothing.
		plan, _, err = m.Reconcile(ctx, cfg, RunOptions{})
		if err != nil || len(plan.Actions) != 0 {
			t.Fatalf("second run: %v, actions %v", err, plan.Actions)
		}

		// Two hours later the pre-warm hold is over: back to on-demand, and the
		// switch is recorded for the provider's limit.
		clock.Advance(2 * time.Hour)
		if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if c := tableNames(t, st, "ev_")["ev_1772668800"]; c.Mode != store.OnDemand {
			t.Errorf("next shard after the hold: %+v, want on-demand", c)
		}
		shards, last, err := Observe(ctx, st, "ev")
		if err != nil {
			t.Fatal(err)
		}
		if !last.At.Equal(clock.Now()) {
			t.Errorf("last run %s, want %s", last.At, clock.Now())
		}
		for _, sh := range shards {
			if sh.Table == "ev_1772668800" && (len(sh.History.Switches) != 1 || sh.History.PrewarmedAt.IsZero()) {
				t.Errorf("history of the next shard: %+v", sh.History)
			}
		}

		// A day and a half later, Mar 2's shard (ends Mar 3, + 48h = Mar 5) is
		// expired and dropped; the runway advanced.
		clock.Set(time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC))
		if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		got = tableNames(t, st, "ev_")
		if _, ok := got["ev_1772409600"]; ok {
			t.Error("expired shard ev_1772409600 not dropped")
		}
		if _, ok := got["ev_1772841600"]; !ok {
			t.Error("runway shard ev_1772841600 not created")
		}
		if _, ok := got["ev_eu_1772582400"]; !ok {
			t.Error("another index's shard was touched")
		}
		if v := metricValue(t, reg, "ebb_shard_runway_seconds", "ev"); v != (3 * 24 * time.Hour).Seconds() {
			t.Errorf("runway %vs, want 3 days", v)
		}
	})
}

func TestDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
		st := open(t, clock.Now)
		cfg := Config{Index: "ev", TableBucket: time.Hour, Retention: time.Hour, Runway: 1, Schema: testSchema}
		m, _ := newManager(t, st, clock.Now, cfg)
		plan, results, err := m.Reconcile(ctx, cfg, RunOptions{DryRun: true})
		if err != nil || results != nil {
			t.Fatal(err, results)
		}
		if len(plan.Actions) != 3 {
			t.Errorf("plan %v, want 3 creates", plan.Actions)
		}
		if got := tableNames(t, st, "ev_"); len(got) != 0 {
			t.Errorf("dry run created %v", got)
		}
	})
}

// failingStore fails SetCapacity on one table, to show that one failed
// action does not stop the others.
type failingStore struct {
	store.Store
	failTable  string
	failTables atomic.Int32 // Tables calls left to fail
}

func (f *failingStore) SetCapacity(ctx context.Context, table string, c store.Capacity) error {
	if table == f.failTable {
		return store.ErrCapacityLimit
	}
	return f.Store.SetCapacity(ctx, table, c)
}

func (f *failingStore) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	if f.failTables.Add(-1) >= 0 {
		return nil, store.ErrUnavailable
	}
	return f.Store.Tables(ctx, prefix)
}

func TestApplyActionsAreIndependent(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
		st := &failingStore{Store: open(t, clock.Now), failTable: "ev_1772625600"} // the hot shard
		cfg := Config{Index: "ev", TableBucket: time.Hour, Retention: time.Hour, Runway: 1, Schema: testSchema,
			Capacity: CapacityPolicy{HotRead: 1, HotWrite: 1}}
		m, reg := newManager(t, st, clock.Now, cfg)
		_, results, err := m.Reconcile(ctx, cfg, RunOptions{})
		if !errors.Is(err, store.ErrCapacityLimit) {
			t.Fatalf("err %v, want the capacity failure", err)
		}
		failed := 0
		for _, r := range results {
			if r.Err != nil {
				failed++
				if r.Action.Table != "ev_1772625600" {
					t.Errorf("unexpected failure %v", r.Err)
				}
			}
		}
		if failed != 1 || len(tableNames(t, st, "ev_")) != 3 {
			t.Errorf("%d failed; tables %v", failed, tableNames(t, st, "ev_"))
		}
		if n := metricValue(t, reg, "ebb_reconcile_failures_total", ""); n != 1 {
			t.Errorf("failures %v, want 1", n)
		}
	})
}

func TestClockJumpGuardHoldsUntilConfirmed(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
		st := open(t, clock.Now)
		cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 24 * time.Hour, Runway: 1, Schema: testSchema}
		m, _ := newManager(t, st, clock.Now, cfg)
		if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		before := tableNames(t, st, "ev_")
		clock.Advance(72 * time.Hour)
		for range 2 { // the guard holds on every run, not just the first
			plan, _, err := m.Reconcile(ctx, cfg, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !plan.ClockJump {
				t.Fatal("clock jump not detected")
			}
			for name := range before {
				if _, ok := tableNames(t, st, "ev_")[name]; !ok {
					t.Fatalf("%s dropped despite the clock jump", name)
				}
			}
		}
		plan, _, err := m.Reconcile(ctx, cfg, RunOptions{AllowClockJump: true})
		if err != nil {
			t.Fatal(err)
		}
		drops := 0
		for _, a := range plan.Actions {
			if a.Op == OpDrop && !a.Deferred {
				drops++
			}
		}
		if drops == 0 {
			t.Fatalf("confirmed run dropped nothing: %v", plan.Actions)
		}
		clock.Advance(time.Minute)
		if plan, _, _ := m.Reconcile(ctx, cfg, RunOptions{}); plan.ClockJump {
			t.Error("guard still tripped after the confirmed run was recorded")
		}
	})
}

// TestFailedRunsCounted runs passes against a backend that fails the
// first three: each is an error and counted, nothing is created, and the
// fourth creates the runway and records its success. (The loop that
// retries passes with a backoff is ebb.DB's role loop.)
func TestFailedRunsCounted(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	st := &failingStore{Store: testbackend.Pebble(t, clock.Now)}
	st.failTables.Store(3)
	cfg := Config{Index: "ev", TableBucket: time.Hour, Retention: time.Hour, Runway: 1, Schema: testSchema}
	m, reg := newManager(t, st, clock.Now, cfg)
	for i := range 3 {
		if err := m.RunOnce(ctx); err == nil {
			t.Fatalf("run %d succeeded against a failing backend", i)
		}
		if n := len(tableNames(t, st.Store, "ev_")); n != 0 {
			t.Fatalf("%d shards before the backend recovered", n)
		}
	}
	clock.Advance(7 * time.Second)
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tableNames(t, st.Store, "ev_")); n != 3 {
		t.Fatalf("%d shards after recovery, want 3", n)
	}
	if n := metricValue(t, reg, "ebb_reconcile_failures_total", ""); n != 3 {
		t.Errorf("failures %v, want 3", n)
	}
	if v := metricValue(t, reg, "ebb_reconcile_last_success_timestamp_seconds", ""); v != float64(clock.Now().Unix()) {
		t.Errorf("last success %v, want %v", v, clock.Now().Unix())
	}
}

// metricValue reads one series (the first, or the one whose first label
// has value label) from a registry.
func metricValue(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	t.Fatalf("series %s{%s} not found", name, label)
	return 0
}

// TestClockJumpGuardAcrossQuietPasses: passes with nothing to change write
// no record per index, only the pass record, and that keeps the guard
// measuring from the last pass: passes 12 hours apart never trip it, a
// jump of 72 hours does, on every pass until a run is confirmed.
func TestClockJumpGuardAcrossQuietPasses(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
	st := testbackend.Pebble(t, clock.Now)
	week := 7 * 24 * time.Hour
	cfg := Config{Index: "ev", TableBucket: week, Retention: week, Runway: 1, Schema: testSchema}
	m, _ := newManager(t, st, clock.Now, cfg)
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		clock.Advance(12 * time.Hour)
		if err := m.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if plan, _, _ := m.Reconcile(ctx, cfg, RunOptions{DryRun: true}); plan.ClockJump {
			t.Fatalf("guard tripped by passes 12 hours apart at %s", clock.Now())
		}
	}
	before := tableNames(t, st, "ev_")
	clock.Advance(3 * week)
	for range 2 {
		if err := m.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		for name := range before {
			if _, ok := tableNames(t, st, "ev_")[name]; !ok {
				t.Fatalf("%s dropped despite the clock jump", name)
			}
		}
	}
	if _, _, err := m.Reconcile(ctx, cfg, RunOptions{AllowClockJump: true}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if plan, _, _ := m.Reconcile(ctx, cfg, RunOptions{DryRun: true}); plan.ClockJump {
		t.Error("guard still tripped after the confirmed run")
	}
}

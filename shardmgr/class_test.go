package shardmgr

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestColdShardsMoveClass follows an index with cold_after on every
// backend, under DynamoDB's class rules: shards that ended cold_after ago
// move to Standard-IA as they turn cold (and the hot and runway shards
// stay standard); raising cold_after moves the younger ones back; a shard
// that already changed twice within 30 days is deferred with the moment
// it may change again, and moved then; the store refuses nothing the plan
// applies.
func TestColdShardsMoveClass(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
		clock := storetest.NewClock(start)
		st := storetest.NewClassStore(open(t, clock.Now), store.DynamoDBClasses, clock.Now)
		// Day shards kept 10 days; shards that ended 3 days ago are cold.
		cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 240 * time.Hour, Runway: 1, Schema: testSchema,
			Capacity: CapacityPolicy{ColdAfter: 72 * time.Hour}, Classes: store.DynamoDBClasses}
		m, _ := newManager(t, st, clock.Now, cfg)
		// check: every live shard is in Standard-IA exactly when it ended
		// at least coldAfter before now, and the named ones are.
		check := func(when string, coldAfter time.Duration, named map[string]store.TableClass) {
			t.Helper()
			infos, err := st.Tables(ctx, "ev_")
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, info := range infos {
				start, _ := ParseShardName("ev", cfg.TableBucket, info.Spec.Name)
				want := store.ClassStandard
				if !clock.Now().Before(start.Add(cfg.TableBucket).Add(coldAfter)) {
					want = store.ClassInfrequentAccess
				}
				if n, ok := named[info.Spec.Name]; ok && n != want {
					t.Fatalf("%s: the test expects %s to be %s", when, info.Spec.Name, n)
				}
				delete(named, info.Spec.Name)
				if info.Class.Or() != want {
					lines = append(lines, info.Spec.Name+" "+string(info.Class.Or())+", want "+string(want))
				}
			}
			if len(named) > 0 || len(lines) > 0 {
				t.Fatalf("%s: wrong classes %v, missing %v", when, lines, named)
			}
		}
		day := func(m time.Month, d int) string { return ShardName("ev", time.Date(2026, m, d, 0, 0, 0, 0, time.UTC)) }
		// The first pass creates every shard, the next moves the cold ones:
		// on Mar 10 12:00 with cold_after 3 days, the shard of Mar 6
		// (ended Mar 7) is cold, the one of Mar 7 (ended Mar 8) is not.
		for range 2 {
			if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		check("two passes", cfg.Capacity.ColdAfter, map[string]store.TableClass{
			day(2, 28): store.ClassInfrequentAccess, day(3, 6): store.ClassInfrequentAccess,
			day(3, 7): store.ClassStandard, day(3, 10): store.ClassStandard, day(3, 11): store.ClassStandard,
		})
		// A day later the shard of Mar 7 is cold too, and nothing else moves.
		clock.Advance(24 * time.Hour)
		plan, _, err := m.Reconcile(ctx, cfg, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check("a day later", cfg.Capacity.ColdAfter, map[string]store.TableClass{day(3, 7): store.ClassInfrequentAccess})
		if !strings.Contains(plan.String(), "~ set_class     "+day(3, 7)+" -> standard_ia  (cold: ended 84h ago, at least cold_after 72h)") {
			t.Fatalf("plan line of the move:\n%s", plan)
		}
		// cold_after raised to 5 days: the shards of Mar 6 and Mar 7 are
		// warm again and go back (each has one change so far).
		cfg.Capacity.ColdAfter = 120 * time.Hour
		if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		check("cold_after raised", cfg.Capacity.ColdAfter, map[string]store.TableClass{day(3, 5): store.ClassInfrequentAccess, day(3, 6): store.ClassStandard, day(3, 7): store.ClassStandard})
		// Lowered again at once: those three changed twice in the last 30
		// days, so their third change is deferred until 30 days after the
		// first, with that moment in the reason.
		cfg.Capacity.ColdAfter = 72 * time.Hour
		clock.Advance(time.Hour)
		mar7 := day(3, 7)
		plan, _, err = m.Reconcile(ctx, cfg, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var deferred *Action
		for i, a := range plan.Actions {
			if a.Op == OpSetClass && a.Table == mar7 {
				deferred = &plan.Actions[i]
			}
		}
		if deferred == nil || !deferred.Deferred || !strings.Contains(deferred.Reason, "2 table class changes in the last 720h") ||
			!strings.Contains(deferred.Reason, "next allowed at 2026-04-10T12:00:00Z") {
			t.Fatalf("the third change of %s: %+v, want deferred until 2026-04-10T12:00:00Z; plan:\n%s", mar7, deferred, plan)
		}
		if got := st.Class(mar7); got.Or() != store.ClassStandard {
			t.Fatalf("%s is %q, want still standard", mar7, got)
		}
		// 30 days after its first change it moves (the shard is still
		// inside its retention only if retention allows: use a long one).
		cfg.Retention = 60 * 24 * time.Hour
		clock.Set(time.Date(2026, 4, 10, 12, 0, 0, 0, time.UTC))
		if _, _, err := m.Reconcile(ctx, cfg, RunOptions{AllowClockJump: true}); err != nil {
			t.Fatal(err)
		}
		if got := st.Class(mar7); got != store.ClassInfrequentAccess {
			t.Fatalf("%s is %q 30 days after its first change, want standard_ia", mar7, got)
		}
		if n := st.Refusals(); n != 0 {
			t.Fatalf("the store refused %d class changes the plan applied", n)
		}
	})
}

// TestColdAfterWithoutClasses: on a backend without table classes the
// planner proposes no class change, and Apply of one says so.
func TestColdAfterWithoutClasses(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 240 * time.Hour, Runway: 1, Schema: testSchema,
		Capacity: CapacityPolicy{ColdAfter: 72 * time.Hour}}
	observed := []Shard{{Table: ShardName("ev", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))}}
	for _, a := range NewPlan(cfg, now, observed, LastRun{}).Actions {
		if a.Op == OpSetClass {
			t.Fatalf("a class change planned without classes: %+v", a)
		}
	}
	st := testbackend.Pebble(t, nil)
	res := Apply(context.Background(), st, Plan{Actions: []Action{{Op: OpSetClass, Table: observed[0].Table, Class: store.ClassInfrequentAccess}}}, nil)
	if len(res) != 1 || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "no table classes") {
		t.Fatalf("apply of a class change on pebble: %+v", res)
	}
	cfg.Capacity.ColdAfter = -time.Hour
	if err := cfg.Validate(); err == nil {
		t.Fatal("a negative cold_after validated")
	}
}

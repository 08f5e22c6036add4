package shardmgr

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestPrepareDropHoldsDrops: a drop the PrepareDrop hook refuses is held:
// deferred with the hook's reason, in the run's plan and in the next dry
// run's, counted in ebb_shard_drops_held, and applied once the hook lets
// it go, and what it prepared for a drop reaches BeforeDrop with that
// drop alone. The hook is not called by a dry run.
func TestPrepareDropHoldsDrops(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
		st := open(t, clock.Now)
		cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 48 * time.Hour, Runway: 2, Schema: testSchema, Archive: "file:///archive"}
		var refuse atomic.Bool
		var calls atomic.Int32
		var dropped sync.Map // table -> the Prepared BeforeDrop was handed
		reg := prometheus.NewRegistry()
		m, err := New(Options{
			Store: st, Configs: func(context.Context) ([]Config, error) { return []Config{cfg}, nil }, Now: clock.Now, Registerer: reg,
			PrepareDrop: func(_ context.Context, c Config, a Action) (Prepared, error) {
				calls.Add(1)
				if c.Archive != cfg.Archive || a.Op != OpDrop {
					t.Errorf("hook called with %q, %s", c.Archive, a.Op)
				}
				if refuse.Load() {
					return Prepared{}, errors.New("archive not verified")
				}
				return Prepared{Archive: c.Archive + "/ev/" + a.Table + ".parquet"}, nil
			},
			BeforeDrop: func(_ context.Context, _ string, a Action, p Prepared) error {
				dropped.Store(a.Table, p)
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		first := len(tableNames(t, st, "ev_"))
		clock.Advance(24 * time.Hour)
		refuse.Store(true)
		plan, _, err := m.Reconcile(ctx, cfg, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, a := range plan.Actions {
			if a.Op == OpDrop {
				if !a.Deferred || !strings.HasPrefix(a.Reason, "held: archive not verified (expired: ") || !strings.Contains(a.Reason, "archived to file:///archive") {
					t.Errorf("drop %s: deferred %v, reason %q", a.Table, a.Deferred, a.Reason)
				}
				held++
			}
		}
		if held == 0 || len(tableNames(t, st, "ev_")) != first+1 {
			t.Fatalf("%d drops held, %d tables (had %d)", held, len(tableNames(t, st, "ev_")), first)
		}
		dropped.Range(func(k, _ any) bool {
			t.Errorf("BeforeDrop called for the held drop of %s", k)
			return true
		})
		if got := testutil.ToFloat64(m.metrics.held); got != float64(held) {
			t.Errorf("ebb_shard_drops_held %v, want %d", got, held)
		}
		before := calls.Load()
		plan, _, err = m.Reconcile(ctx, cfg, RunOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if calls.Load() != before {
			t.Error("a dry run called the hook")
		}
		for _, a := range plan.Actions {
			if a.Op == OpDrop && (!a.Deferred || !strings.Contains(a.Reason, "held at the last run: archive not verified")) {
				t.Errorf("dry run: drop %s deferred %v, reason %q", a.Table, a.Deferred, a.Reason)
			}
		}
		refuse.Store(false)
		if err := m.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(tableNames(t, st, "ev_")); got != first+1-held {
			t.Errorf("%d tables once the hook let the drops go, want %d", got, first+1-held)
		}
		n := 0
		dropped.Range(func(k, v any) bool {
			n++
			if want := cfg.Archive + "/ev/" + k.(string) + ".parquet"; v.(Prepared).Archive != want {
				t.Errorf("BeforeDrop of %s handed archive %q, want %q", k, v.(Prepared).Archive, want)
			}
			return true
		})
		if n != held {
			t.Errorf("BeforeDrop called for %d drops, want %d", n, held)
		}
		if got := testutil.ToFloat64(m.metrics.held); got != 0 {
			t.Errorf("ebb_shard_drops_held %v after the drops", got)
		}
	})
}

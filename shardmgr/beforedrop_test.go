package shardmgr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestBeforeDropHoldsTheDrop checks Options.BeforeDrop: it is called with
// the index and the drop before the shard goes, and its error keeps the
// shard until a later run succeeds.
func TestBeforeDropHoldsTheDrop(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
	st := testbackend.Pebble(t, clock.Now)
	cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 48 * time.Hour, Runway: 2, Schema: testSchema}
	var calls []Action
	fail := errors.New("log unavailable")
	hookErr := fail
	m, err := New(Options{
		Store: st, Configs: func(context.Context) ([]Config, error) { return []Config{cfg}, nil },
		Now: clock.Now,
		BeforeDrop: func(_ context.Context, index string, a Action, p Prepared) error {
			if index != "ev" || a.Op != OpDrop || p != (Prepared{}) {
				t.Errorf("BeforeDrop(%s, %+v, %+v): want a drop with nothing prepared, there being no PrepareDrop", index, a, p)
			}
			calls = append(calls, a)
			return hookErr
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	oldest := "ev_1772409600"
	clock.Advance(24 * time.Hour)
	if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); !errors.Is(err, fail) {
		t.Fatalf("run with a failing hook: %v, want its error", err)
	}
	if _, ok := tableNames(t, st, "ev_")[oldest]; !ok {
		t.Fatalf("%s dropped although BeforeDrop failed", oldest)
	}
	if len(calls) != 1 || calls[0].Table != oldest || !calls[0].End.Equal(calls[0].Start.Add(24*time.Hour)) {
		t.Fatalf("BeforeDrop calls %+v, want one for %s", calls, oldest)
	}
	hookErr = nil
	if _, _, err := m.Reconcile(ctx, cfg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tableNames(t, st, "ev_")[oldest]; ok {
		t.Fatalf("%s kept after BeforeDrop succeeded", oldest)
	}
}

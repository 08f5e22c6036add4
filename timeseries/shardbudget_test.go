package timeseries

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// TestCreateRefusesWhatTheManagerCannotKeep: Create and changes through it
// refuse an index the shard manager could not keep: more indexes than a
// pass over them (at VisitBudget each) fits in half the narrowest table
// bucket, or more shards in total than MaxTotalShards. A refused create
// or change writes nothing.
func TestCreateRefusesWhatTheManagerCannotKeep(t *testing.T) {
	ctx := context.Background()
	st := testbackend.Pebble(t, nil)
	svc, err := New(ctx, st, Options{VisitBudget: 500 * time.Millisecond, MaxTotalShards: 40})
	if err != nil {
		t.Fatal(err)
	}
	small := func(name string, runway int) Config {
		return Config{Name: name, TableBucket: 2 * time.Second, PartitionBucket: time.Second, Retention: 2 * time.Second, Runway: runway}
	}
	refused := func(what string, cfg Config, mention string) {
		t.Helper()
		_, _, err := svc.Create(ctx, cfg)
		if !errors.Is(err, ErrShardBudget) || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), mention) {
			t.Fatalf("%s: %v, want ErrShardBudget and ErrInvalid mentioning %q", what, err, mention)
		}
	}
	for _, name := range []string{"a", "b"} {
		if _, _, err := svc.Create(ctx, small(name, 2)); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	// Two indexes of 2 s shards fill a pass of half a shard; a third of any
	// width does not fit.
	refused("a third index", Config{Name: "c", TableBucket: time.Hour, PartitionBucket: time.Minute, Retention: time.Hour, Runway: 2}, "table_bucket")
	if _, err := svc.Get(ctx, "c"); !errors.Is(err, ErrIndexNotFound) {
		t.Fatalf("the refused index exists: %v", err)
	}
	// Shards: a and b keep 1+2+2 each; a runway of 40 takes the total to
	// 48, above 40.
	refused("a longer runway", small("a", 40), "shards")
	if idx, err := svc.Get(ctx, "a"); err != nil || idx.Runway != 2 {
		t.Fatalf("after a refused change, a = %+v, %v; want runway 2", idx.Config, err)
	}
	if _, _, err := svc.Create(ctx, small("a", 3)); err != nil {
		t.Fatalf("a change within the budget: %v", err)
	}
	// The same index again is not a change, whatever the budget says.
	if _, _, err := svc.Create(ctx, small("a", 3)); err != nil {
		t.Fatalf("an identical create: %v", err)
	}
	if err := svc.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Create(ctx, Config{Name: "c", TableBucket: time.Hour, PartitionBucket: time.Minute, Retention: time.Hour, Runway: 2}); err != nil {
		t.Fatalf("once b is gone, c fits: %v", err)
	}
}

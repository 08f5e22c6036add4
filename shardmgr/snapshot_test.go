package shardmgr

import (
	"strings"
	"testing"
	"time"
)

// TestDropReasonNamesTheSnapshot: on a backend that keeps a snapshot of a
// dropped table (Cassandra's auto_snapshot), the plan says so beside every
// drop, so an operator reading `ebb index plan` knows the disk is not freed.
func TestDropReasonNamesTheSnapshot(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	old := ShardName("ev", now.Add(-48*time.Hour).Truncate(time.Hour))
	for _, keeps := range []bool{false, true} {
		cfg := Config{Index: "ev", TableBucket: time.Hour, Retention: 2 * time.Hour, Runway: 2, DropKeepsSnapshot: keeps}
		plan := NewPlan(cfg, now, []Shard{{Table: old}}, LastRun{})
		found := false
		for _, a := range plan.Actions {
			if a.Op != OpDrop || a.Table != old {
				continue
			}
			found = true
			if got := strings.Contains(a.Reason, "auto_snapshot"); got != keeps {
				t.Errorf("DropKeepsSnapshot %v: drop reason %q", keeps, a.Reason)
			}
		}
		if !found {
			t.Fatalf("no drop of %s planned: %v", old, plan.Actions)
		}
	}
}

package ebb_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
)

// TestRewriteRole checks that a TTL change asking for a rewrite is run by
// the DB's rewriter role at once, under its lease, for a list feature and
// a shared table, and that its rows are counted in the metrics.
func TestRewriteRole(t *testing.T) {
	reg := prometheus.NewRegistry()
	db, err := ebb.Open(t.Context(), ebb.Options{Store: memStore(t), Registerer: reg, CacheTTL: 10 * time.Millisecond, ReplicaID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	now := db.Now()
	id := lists.FeatureID{EntityType: "user", Feature: "seen"}
	if _, _, err := db.Lists().CreateFeature(ctx, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Lists().Add(ctx, id, "alice", []lists.Item{{Value: []byte("a"), Timestamp: now}, {Value: []byte("b"), Timestamp: now.Add(-30 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Tables().CreateTable(ctx, "orders", multitable.Config{DefaultTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Tables().Put(ctx, "orders", multitable.PutItem{Key: "o-1", Timestamp: now}); err != nil {
		t.Fatal(err)
	}

	if _, _, err := db.Lists().CreateFeatureWith(ctx, id, lists.FeatureConfig{TTL: 10 * time.Minute, Rewrite: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Tables().CreateTable(ctx, "orders", multitable.Config{DefaultTTL: 2 * time.Hour, Rewrite: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		lj, _, err := db.Lists().Rewrite(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		tj, _, err := db.Tables().Rewrite(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if !lj.Active() && !tj.Active() {
			if lj.Rewritten != 1 || lj.Removed != 1 || tj.Rewritten != 1 {
				t.Fatalf("jobs at their end: list %+v, table %+v", lj, tj)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not done after 10s: list %+v, table %+v", lj, tj)
		}
		time.Sleep(10 * time.Millisecond)
	}
	it, err := db.Tables().Get(ctx, "orders", "o-1")
	if err != nil || it.ExpiresAt.Sub(now) < time.Hour+59*time.Minute {
		t.Fatalf("item after the rewrite: %+v %v, want about 2h from its put", it, err)
	}
	if got := counterValue(t, reg, "ebb_ttl_rewrite_rows_total"); got != 3 {
		t.Fatalf("ebb_ttl_rewrite_rows_total = %v, want 3", got)
	}
	if got := counterValue(t, reg, "ebb_ttl_rewrite_jobs_total"); got != 2 {
		t.Fatalf("ebb_ttl_rewrite_jobs_total = %v, want 2", got)
	}
}

// TestRewriteResumesAfterRestart records a rewrite in a DB that runs no
// background roles, closes it, and opens the directory again: the job
// recorded before the restart runs to its end.
func TestRewriteResumesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	id := lists.FeatureID{EntityType: "user", Feature: "seen"}
	db, err := ebb.Open(ctx, ebb.Options{Dir: dir, NoBackground: true, CacheTTL: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Lists().CreateFeature(ctx, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Lists().Add(ctx, id, "alice", []lists.Item{{Value: []byte("a"), Timestamp: db.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Lists().CreateFeatureWith(ctx, id, lists.FeatureConfig{TTL: 10 * time.Minute, Rewrite: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = ebb.Open(ctx, ebb.Options{Dir: dir, CacheTTL: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, ok, err := db.Lists().Rewrite(ctx, id)
		if err != nil || !ok {
			t.Fatalf("job after the restart: %v %v", ok, err)
		}
		if !j.Active() {
			if j.Rewritten != 1 {
				t.Fatalf("job at its end: %+v", j)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job not done 10s after the restart: %+v", j)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package ebb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// slowStore is a backend whose table changes and metadata writes take a
// while, as a remote backend's do (or the embedded one's under load): the
// shard manager's passes and its lease's renewals then overlap.
type slowStore struct {
	store.Store
	tables, meta time.Duration
}

func (s slowStore) CreateTable(ctx context.Context, spec store.TableSpec) error {
	if spec.Name != store.MetaTable {
		time.Sleep(s.tables)
	}
	return s.Store.CreateTable(ctx, spec)
}

func (s slowStore) DropTable(ctx context.Context, name string) error {
	time.Sleep(s.tables)
	return s.Store.DropTable(ctx, name)
}

func (s slowStore) Write(ctx context.Context, table string, batch []store.Mutation) error {
	if table == store.MetaTable {
		time.Sleep(s.meta)
	}
	return s.Store.Write(ctx, table, batch)
}

// syncBuffer is a log sink for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestManagerKeepsItsLeaseThroughPasses: many indexes with small table
// buckets, accepted by an earlier version and still stored, on a backend
// whose table changes take a while: one pass of the shard manager is far
// longer than its lease, while the lease renews on its own schedule. The
// manager must never fence itself out (no action refused, the lease still
// at epoch 1, no takeover logged), and since it cannot keep every runway
// it must say so: "runway below one shard" and its metric.
func TestManagerKeepsItsLeaseThroughPasses(t *testing.T) {
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	raw := memStore(t)
	ctx := t.Context()
	const indexes = 30
	meta := store.Meta{S: raw}
	if err := meta.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range indexes {
		cfg := timeseries.Config{Name: fmt.Sprintf("ev%02d", i), TableBucket: time.Second, PartitionBucket: time.Second, Retention: time.Second, Runway: 1}.WithDefaults()
		doc, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := meta.Put(ctx, "index", cfg.Name, doc); err != nil {
			t.Fatal(err)
		}
	}
	db, err := ebb.Open(ctx, ebb.Options{
		Store:         slowStore{Store: raw, tables: 20 * time.Millisecond, meta: 2 * time.Millisecond},
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
		Registerer:    reg,
		LeaseDuration: 300 * time.Millisecond,
		ReplicaID:     "r1",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(15 * time.Second)
	for (counterValue(t, reg, "ebb_reconcile_actions_total") < 6*indexes || counterValue(t, reg, "ebb_reconcile_runway_short_total") == 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	out := logs.String()
	var bad []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "role="+ebb.RoleShardManager) && strings.Contains(line, "lease lost") ||
			strings.Contains(line, "taken over") || strings.Contains(line, "lapsed or never taken") {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		t.Errorf("the only replica fenced its own shard manager (%d log lines), first:\n%s", len(bad), bad[0])
	}
	if got := counterValue(t, reg, "ebb_reconcile_fenced_total"); got != 0 {
		t.Errorf("ebb_reconcile_fenced_total = %v, want 0: nobody else holds the lease", got)
	}
	if got := gaugeValue(t, reg, "ebb_lease_epoch", ebb.RoleShardManager); got != 1 {
		t.Errorf("shard-manager lease at epoch %v, want 1: it never changed hands", got)
	}
	if !strings.Contains(out, "runway below one shard") {
		t.Errorf("passes of %d indexes of 1s shards at 20ms a table change cannot keep every runway, yet nothing said so", indexes)
	}
	if got := counterValue(t, reg, "ebb_reconcile_runway_short_total"); got == 0 {
		t.Errorf("ebb_reconcile_runway_short_total = 0 after passes that could not keep every runway")
	}
}

// counterValue sums a counter's series in the registry; 0 when it has none.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

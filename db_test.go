package ebb_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func memStore(t *testing.T) store.Store {
	t.Helper()
	st, err := ebbpebble.Open("db", ebbpebble.Options{FS: vfs.NewMem(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestOpenCloseLeavesNoGoroutine opens and closes a DB a hundred times,
// with its background roles running, and checks that every goroutine it
// started has stopped when Close returns.
func TestOpenCloseLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	for i := range 100 {
		db, err := ebb.Open(t.Context(), ebb.Options{Dir: dir, SweepInterval: time.Millisecond, ReconcileInterval: time.Millisecond})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if i%10 == 0 {
			// Let the roles take their leases and run a pass or two.
			time.Sleep(5 * time.Millisecond)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("second close %d: %v", i, err)
		}
	}
	// Pebble's own goroutines wind down asynchronously after Close.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after 100 open/close cycles, %d before", n, before)
	}
	if err := goleak.Find(); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []ebb.Options{
		{},
		{Dir: "x", Store: memStore(t)},
		{Dir: "x", SweepInterval: -time.Second},
		{Dir: "x", LeaseDuration: time.Millisecond},
		{Dir: "x", SweepMaxDeletesPerSecond: -1},
	} {
		if err := o.Validate(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalid", o, err)
		}
		if o.Store != nil {
			_ = o.Store.Close()
		}
	}
	if err := (ebb.Options{Dir: "x"}).Validate(); err != nil {
		t.Errorf("a Dir alone: %v", err)
	}
	// A refused Open closes the Store it was given: the DB owned it.
	st := memStore(t)
	if _, err := ebb.Open(t.Context(), ebb.Options{Store: st, SweepInterval: -1}); err == nil {
		t.Fatal("Open accepted a negative interval")
	}
	if _, err := st.Tables(t.Context(), ""); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("store after a refused Open: %v, want ErrClosed", err)
	}
}

// TestRolesRunUnderLeases checks that the embedded DB takes both leases,
// shows them in Cluster and in the metrics, and that the shard manager
// running under its lease creates shards ahead.
func TestRolesRunUnderLeases(t *testing.T) {
	reg := prometheus.NewRegistry()
	db, err := ebb.Open(t.Context(), ebb.Options{Store: memStore(t), Registerer: reg, ReconcileInterval: 20 * time.Millisecond, ReplicaID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, _, err := db.Indexes().Create(ctx, timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		replica, roles := db.Cluster()
		held := 0
		for _, r := range roles {
			if r.Held && r.Holder == "r1" && r.Epoch >= 1 {
				held++
			}
		}
		if held == 2 && replica == "r1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("roles not held after 5s: %+v", roles)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := gaugeValue(t, reg, "ebb_lease_held", ebb.RoleShardManager); got != 1 {
		t.Fatalf("ebb_lease_held{role=shard-manager} = %v", got)
	}
	idx, err := db.Indexes().Get(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Shards) < 3 {
		t.Fatalf("%d shards, want the hot one and a runway of 2", len(idx.Shards))
	}
}

// gaugeValue reads one role's series of a gauge from the registry.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, role string) float64 {
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
			for _, l := range m.GetLabel() {
				if l.GetName() == "role" && l.GetValue() == role {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("metric %s{role=%q} not found", name, role)
	return 0
}

// TestRunwayTooShortIsRefused is the operator's foot-gun: an index whose
// runway is shorter than a failover of the shard manager would run out of
// shards by design.
func TestRunwayTooShortIsRefused(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: memStore(t), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, _, err = db.Indexes().Create(t.Context(), timeseries.Config{
		Name: "tight", TableBucket: 10 * time.Second, PartitionBucket: time.Second, Retention: 20 * time.Second, Runway: 2,
	})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "raise runway to at least 3") {
		t.Fatalf("Create of a 20s runway with 15s leases: %v, want ErrInvalid naming the runway needed", err)
	}
	if _, _, err := db.Indexes().Create(t.Context(), timeseries.Config{
		Name: "ok", TableBucket: 10 * time.Second, PartitionBucket: time.Second, Retention: 20 * time.Second, Runway: 3,
	}); err != nil {
		t.Fatal(err)
	}
	// The manager now runs at least every half shard, whatever the
	// configured 30 s interval.
	if err := db.Indexes().Manager().RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := db.Indexes().Manager().NextRun(); got != 5*time.Second {
		t.Fatalf("NextRun = %v, want half of the 10s shard", got)
	}
}

// TestManagerBudgetIsEnforced: what the embedded DB accepts by default.
// One index of 1 s shards with a runway of 31 (the runway a 15 s lease
// asks for) is kept; a second such index is refused, since the manager
// cannot promise a pass over both within half a second.
func TestManagerBudgetIsEnforced(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: memStore(t), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := timeseries.Config{Name: "s1", TableBucket: time.Second, PartitionBucket: time.Second, Retention: time.Second, Runway: 31}
	if _, _, err := db.Indexes().Create(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Name = "s2"
	if _, _, err := db.Indexes().Create(t.Context(), cfg); !errors.Is(err, timeseries.ErrShardBudget) || !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a second index of 1s shards: %v, want ErrShardBudget", err)
	}
}

// closeCounter is a backend that counts its Close calls. It hides the
// embedded store's optional interfaces, as a remote backend has none.
type closeCounter struct {
	store.Store
	closes int
}

func (c *closeCounter) Close() error {
	c.closes++
	return c.Store.Close()
}

// TestCloseClosesEveryLayerOnce checks that DB.Close closes the chain of
// stores through its outermost one, so the backend under the meter and the
// expiry decorator is closed exactly once however often Close is called,
// and that the optional interfaces the backend lacks are not found through
// the wrappers.
func TestCloseClosesEveryLayerOnce(t *testing.T) {
	for _, noMetering := range []bool{false, true} {
		backend := &closeCounter{Store: memStore(t)}
		db, err := ebb.Open(t.Context(), ebb.Options{Store: backend, NoBackground: true, NoMetering: noMetering})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Backup(t.Context(), t.TempDir()+"/b"); !errors.Is(err, ebb.ErrBackupUnsupported) {
			t.Errorf("NoMetering=%v: Backup on a backend without checkpoints = %v, want ErrBackupUnsupported", noMetering, err)
		}
		if _, err := db.Usage(t.Context(), false); (err == nil) == noMetering {
			t.Errorf("NoMetering=%v: Usage = %v", noMetering, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("NoMetering=%v: Close: %v", noMetering, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("NoMetering=%v: second Close: %v", noMetering, err)
		}
		if backend.closes != 1 {
			t.Errorf("NoMetering=%v: backend closed %d times, want 1", noMetering, backend.closes)
		}
		if _, err := backend.Tables(t.Context(), ""); !errors.Is(err, store.ErrClosed) {
			t.Errorf("NoMetering=%v: backend after Close: %v, want ErrClosed", noMetering, err)
		}
	}
}

// TestOpenFailureClosesTheBackendOnce checks that an Open failing after
// the wrappers were stacked closes the backend once, through them.
func TestOpenFailureClosesTheBackendOnce(t *testing.T) {
	backend := &closeCounter{Store: memStore(t)}
	reg := prometheus.NewRegistry()
	// The second Open on one registry fails registering its metrics.
	db, err := ebb.Open(t.Context(), ebb.Options{Store: memStore(t), NoBackground: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := ebb.Open(t.Context(), ebb.Options{Store: backend, NoBackground: true, Registerer: reg}); err == nil {
		t.Fatal("a second Open on one registry succeeded")
	}
	if backend.closes != 1 {
		t.Errorf("backend closed %d times, want 1", backend.closes)
	}
}

package ebb_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
)

// TestReopenOnOneRegistry: Close unregisters every metric Open
// registered, so that a process opens a DB again on the same registry
// (a test, a tool reopening its store), and a closed DB exports nothing.
func TestReopenOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	dir := t.TempDir()
	for i := range 3 {
		db, err := ebb.Open(t.Context(), ebb.Options{Dir: dir, Registerer: reg, NoBackground: true})
		if err != nil {
			t.Fatalf("open %d on one registry: %v", i, err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
		// One family of each kind of component: the backend, the meter,
		// expiry, the roles, the indexes' manager, lists, shared tables.
		for _, want := range []string{"ebb_pebble_disk_usage_bytes", "ebb_request_units_total", "ebb_expiry_sweeps_total", "ebb_lease_held", "ebb_reconcile_actions_total", "ebb_list_items_written_total", "ebb_multitable_operations_total"} {
			if !names[want] {
				t.Errorf("open %d: %s not exported; exported %v", i, want, names)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
			var left []string
			for _, mf := range mfs {
				left = append(left, mf.GetName())
			}
			t.Fatalf("after close %d the registry still exports %v (%v)", i, left, err)
		}
	}
	// A DB that fails to open leaves the registry as it found it too.
	if _, err := ebb.Open(t.Context(), ebb.Options{Dir: dir, Registerer: reg, LeaseDuration: -1}); err == nil {
		t.Fatal("a negative lease duration opened")
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Fatalf("a failed open left %d metric families", len(mfs))
	}
}

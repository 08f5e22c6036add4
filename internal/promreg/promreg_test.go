package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
}

func families(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return len(mfs)
}

// TestRegisterAllOrNone: a collector that cannot be registered leaves the
// registry as it was, so that the caller may retry.
func TestRegisterAllOrNone(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, counter("taken")); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, counter("a"), counter("b"), counter("taken")); err == nil {
		t.Fatal("a name taken twice registered")
	}
	if n := families(t, reg); n != 1 {
		t.Fatalf("%d families after a failed Register, want the 1 from before", n)
	}
	if err := Register(reg, counter("a"), counter("b")); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if err := Register(nil, counter("a")); err != nil {
		t.Fatalf("a nil registerer: %v", err)
	}
}

// TestTrackerUnregistersAll: what registered through a Tracker and was not
// unregistered through it is unregistered by UnregisterAll, and nothing
// else; the names are free again after.
func TestTrackerUnregistersAll(t *testing.T) {
	reg := prometheus.NewRegistry()
	other := counter("other")
	reg.MustRegister(other)
	tr := Track(reg)
	a, b := counter("a"), counter("b")
	if err := Register(tr, a, b); err != nil {
		t.Fatal(err)
	}
	tr.MustRegister(counter("c"))
	if !tr.Unregister(b) {
		t.Fatal("b was not registered")
	}
	if err := tr.Register(counter("other")); err == nil {
		t.Fatal("a taken name registered")
	}
	tr.UnregisterAll()
	if n := families(t, reg); n != 1 {
		t.Fatalf("%d families left, want only the one registered beside the tracker", n)
	}
	if err := Register(tr, counter("a"), counter("b"), counter("c")); err != nil {
		t.Fatalf("names not freed: %v", err)
	}
}

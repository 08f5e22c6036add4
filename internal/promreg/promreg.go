// Package promreg is ebb's one way to register metrics: every component
// takes a prometheus.Registerer in its Options (nil registers nothing) and
// registers its collectors with Register, all or none, so that a failed
// constructor leaves the registry as it found it; and the DB hands its
// components a Tracker, so that DB.Close unregisters everything Open
// registered and a process may open a DB again on the same registry.
package promreg

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers cs on reg in order. On the first failure it
// unregisters those it registered and returns that error, so that the
// caller may retry. A nil reg registers nothing.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return err
		}
	}
	return nil
}

// Tracker is a Registerer that keeps the collectors registered through it
// until they are unregistered through it, so that their owner can
// unregister all of them at once. It is safe for concurrent use.
type Tracker struct {
	reg prometheus.Registerer
	mu  sync.Mutex
	cs  []prometheus.Collector
}

var _ prometheus.Registerer = (*Tracker)(nil)

// Track returns a Tracker registering on reg.
func Track(reg prometheus.Registerer) *Tracker { return &Tracker{reg: reg} }

// Register registers c on the underlying Registerer and keeps it if that
// succeeded.
func (t *Tracker) Register(c prometheus.Collector) error {
	if err := t.reg.Register(c); err != nil {
		return err
	}
	t.mu.Lock()
	t.cs = append(t.cs, c)
	t.mu.Unlock()
	return nil
}

// MustRegister registers cs and panics on the first failure, as
// prometheus.Registerer's MustRegister does.
func (t *Tracker) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := t.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister unregisters c and forgets it.
func (t *Tracker) Unregister(c prometheus.Collector) bool {
	t.mu.Lock()
	t.cs = slices.DeleteFunc(t.cs, func(k prometheus.Collector) bool { return k == c })
	t.mu.Unlock()
	return t.reg.Unregister(c)
}

// UnregisterAll unregisters every collector registered through t and not
// unregistered since, newest first.
func (t *Tracker) UnregisterAll() {
	t.mu.Lock()
	cs := t.cs
	t.cs = nil
	t.mu.Unlock()
	for _, c := range slices.Backward(cs) {
		t.reg.Unregister(c)
	}
}

package server

import (
	"sync"
	"time"

	"github.com/ebb-data/ebb/meter"
)

// A month projected from a few seconds of metering swings with every
// burst and every idle moment: the dashboard's projection, and the cost
// GET /v1/admin/usage?cost=true answers, read the metered rate over at
// least usageWindow instead, or since the process started when it has
// run for less.
const (
	usageWindow = 10 * time.Minute
	// usageEvery spaces the snapshots kept: a window's start is known to
	// within usageEvery.
	usageEvery = time.Minute
)

// usageHistory keeps snapshots of the meter, taken as usage is asked for,
// so that the rate over the last usageWindow can be told from two of them.
// It holds at most about usageWindow/usageEvery + 1 snapshots.
type usageHistory struct {
	mu    sync.Mutex
	snaps []meter.Usage // oldest first, at least usageEvery apart
}

// recent records u and returns the usage over the projection window: what
// was metered since the newest snapshot at least usageWindow older than u,
// or u itself (since the start) when there is none yet.
func (h *usageHistory) recent(u meter.Usage) meter.Usage {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.snaps); n == 0 || u.At.Sub(h.snaps[n-1].At) >= usageEvery || !h.snaps[n-1].Since.Equal(u.Since) {
		snap := u
		snap.Storage = nil
		h.snaps = append(h.snaps, snap)
	}
	for i := len(h.snaps) - 1; i >= 0; i-- {
		base := h.snaps[i]
		if !base.Since.Equal(u.Since) || u.At.Sub(base.At) < usageWindow {
			continue
		}
		h.snaps = h.snaps[i:] // older ones will never be the base again
		return usageSince(u, base)
	}
	return u
}

// usageSince is what u metered after base, a snapshot of the same meter:
// counts are subtracted, and storage, a level, is u's.
func usageSince(u, base meter.Usage) meter.Usage {
	type key struct{ class, op string }
	old := make(map[key]meter.OpUsage, len(base.Operations))
	for _, o := range base.Operations {
		old[key{o.Class, o.Op}] = o
	}
	out := meter.Usage{Since: base.At, At: u.At, Operations: []meter.OpUsage{}, Storage: u.Storage}
	for _, o := range u.Operations {
		b := old[key{o.Class, o.Op}]
		d := meter.OpUsage{
			Class: o.Class, Op: o.Op, Requests: o.Requests - b.Requests,
			Rows: o.Rows - b.Rows, Bytes: o.Bytes - b.Bytes,
			Units: make(map[string]map[string]int64, len(o.Units)),
		}
		for model, units := range o.Units {
			m := make(map[string]int64, len(units))
			for unit, n := range units {
				m[unit] = n - b.Units[model][unit]
			}
			d.Units[model] = m
		}
		if d.Requests != 0 || d.Rows != 0 {
			out.Operations = append(out.Operations, d)
		}
	}
	return out
}

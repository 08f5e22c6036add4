package server

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/meter"
)

// TestUsageWindow: the rate is read over the whole run while it is
// shorter than usageWindow, and afterwards over the span since the newest
// snapshot at least usageWindow old, with the counts of that span only.
func TestUsageWindow(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration, reads int64) meter.Usage {
		return meter.Usage{Since: start, At: start.Add(d), Operations: []meter.OpUsage{{
			Class: "expiry_index", Op: "query", Requests: reads, Rows: 0,
			Units: map[string]map[string]int64{"dynamodb": {"read": reads}},
		}}}
	}
	var h usageHistory
	steps := []struct {
		at        time.Duration
		reads     int64
		wantSince time.Duration
		wantReads int64
	}{
		{5 * time.Second, 2000, 0, 2000},               // young: since the start
		{5 * time.Minute, 2100, 0, 2100},               // still shorter than the window
		{11 * time.Minute, 2200, 5 * time.Second, 200}, // since the first snapshot, 10m55s ago
		{16 * time.Minute, 2300, 5 * time.Minute, 200}, // since the 5-minute one, 11 minutes ago
		{16*time.Minute + 5*time.Second, 2301, 5 * time.Minute, 201},
	}
	for _, s := range steps {
		r := h.recent(at(s.at, s.reads))
		if got := r.Since.Sub(start); got != s.wantSince {
			t.Errorf("at +%s: window since +%s, want +%s", s.at, got, s.wantSince)
		}
		if len(r.Operations) != 1 || r.Operations[0].Requests != s.wantReads || r.Operations[0].Units["dynamodb"]["read"] != s.wantReads {
			t.Errorf("at +%s: operations %+v, want %d reads", s.at, r.Operations, s.wantReads)
		}
		if r.At.Sub(r.Since) < min(usageWindow, s.at) {
			t.Errorf("at +%s: window %s, want at least %s or the whole run", s.at, r.At.Sub(r.Since), usageWindow)
		}
	}
	if len(h.snaps) > int(usageWindow/usageEvery)+2 {
		t.Errorf("%d snapshots kept", len(h.snaps))
	}
}

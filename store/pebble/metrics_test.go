package pebble

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestStallTracker counts Pebble's two stall reasons apart and sums the
// stalls' durations, an unfinished one included.
func TestStallTracker(t *testing.T) {
	var tr stallTracker
	tr.end() // an end without a begin counts nothing
	tr.begin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	tr.end()
	tr.begin(pebble.WriteStallBeginInfo{Reason: "L0 file count limit exceeded"})
	open := tr.snapshot()
	tr.end()
	got := tr.snapshot()
	if got.Memtables != 1 || got.L0 != 1 {
		t.Fatalf("stalls %+v, want one of each reason", got)
	}
	if open.Duration <= 0 || got.Duration < open.Duration {
		t.Fatalf("durations: %s while stalled, %s after", open.Duration, got.Duration)
	}
}

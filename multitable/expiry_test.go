package multitable

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestPhysicalExpiry runs the Registry over the expiry decorator, as
// `ebb serve` does, and shows that expired items and their listing rows
// are physically deleted by a sweep, while items without expiry, items
// not yet expired and an item whose TTL was extended stay.
func TestPhysicalExpiry(t *testing.T) {
	clock := storetest.NewClock(t0)
	raw := testbackend.Pebble(t, clock.Now)
	e, wrapped := newSweptEnv(t, clock, raw, raw, Options{})
	ctx := e.ctx
	e.create("t", 90*time.Second)
	for i := range 20 {
		e.put("t", fmt.Sprint("short", i), at(0), attrsOf(i), nil) // table default: 90 s
	}
	for i := range 5 {
		e.put("t", fmt.Sprint("none", i), at(0), attrsOf(i), ttlp(0))
		e.put("t", fmt.Sprint("hour", i), at(0), attrsOf(i), ttlp(time.Hour))
	}
	e.put("t", "ext", at(0), `{}`, nil)
	clock.Advance(time.Minute)
	e.put("t", "ext", at(0), `{}`, ttlp(time.Hour)) // extended before it expired

	// 31 items and 31 entries; bucket rows for granules 13:00 (the 90 s
	// and 1 h expiries) and 14:00 (ext's), and one without expiry.
	if n := e.rawRows(); n != 31+31+3 {
		t.Fatalf("%d rows before the sweep, want 65", n)
	}
	sweep := func() {
		t.Helper()
		if _, err := wrapped.Sweeper().SweepOnce(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(at(3 * time.Minute))
	sweep()
	if n := e.rawRows(); n != 11+11+3 {
		t.Fatalf("%d rows after the first sweep, want 25: the 90 s items and entries are not gone", n)
	}
	if it, ok := e.get("t", "ext"); !ok || !it.ExpiresAt.Equal(at(time.Minute+time.Hour)) {
		t.Fatalf("extended item: %+v %v", it, ok)
	}
	clock.Set(at(time.Hour + 30*time.Second))
	sweep()
	// The 1 h items, their entries and the 13:00 bucket row are gone.
	if n := e.rawRows(); n != 6+6+2 {
		t.Fatalf("%d rows after the second sweep, want 14", n)
	}
	got := keys(e.listAll("t", nil, 100))
	want := []string{"ext", "none0", "none1", "none2", "none3", "none4"}
	if !slices.Equal(got, want) {
		t.Fatalf("listing = %q, want %q", got, want)
	}
}

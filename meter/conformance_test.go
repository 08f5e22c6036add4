package meter_test

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformancePebble runs the store suite over the meter on the
// embedded backend, as ebb.Open stacks it: the meter passes every call,
// Spec and Scan's tally included, through to the backend's, and closing it
// closes the backend.
func TestConformancePebble(t *testing.T) {
	storetest.Run(t, func(t testing.TB, now func() time.Time) store.Store {
		raw, err := ebbpebble.Open("db", ebbpebble.Options{FS: vfs.NewMem(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		s, err := meter.Wrap(raw, meter.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

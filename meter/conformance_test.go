package meter_test

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformancePebble runs the store suite over the meter on the
// embedded backend, as ebb.Open stacks it: the meter passes every call,
// Spec and Scan's tally included, through to the backend's, and closing it
// closes the backend.
func TestConformancePebble(t *testing.T) {
	storetest.Run(t, func(t testing.TB, now func() time.Time) store.Store {
		s, err := meter.Wrap(testbackend.Pebble(t, now), meter.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

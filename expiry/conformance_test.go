package expiry_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformancePebble runs the store suite over the decorator on the
// embedded backend (synced, as served), so that what ebb serves is what the
// suite checks: its Scan and WriteDeferred pass through to the backend's.
func TestConformancePebble(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t testing.TB, now func() time.Time) store.Store {
		raw, err := ebbpebble.Open("db", ebbpebble.Options{FS: vfs.NewMem(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = raw.Close() })
		s, err := expiry.Wrap(context.Background(), raw, expiry.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

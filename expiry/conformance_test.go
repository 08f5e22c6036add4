package expiry_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformancePebble runs the store suite over the decorator on the
// embedded backend (synced, as served), so that what ebb serves is what the
// suite checks: its Scan and WriteDeferred pass through to the backend's.
// Like testbackend.Pebble, it runs when EBB_TEST_BACKENDS selects pebble,
// so that a run of the cql variants alone (make test-cql, the cluster's
// run in make test) does not repeat it.
func TestConformancePebble(t *testing.T) {
	testselect.Need(t, testselect.Pebble)
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

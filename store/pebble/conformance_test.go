package pebble

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformance runs the shared suite on an in-memory file system with the
// default (synced) write options.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB, now func() time.Time) store.Store {
		s, err := Open("db", Options{FS: vfs.NewMem(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

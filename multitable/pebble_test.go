package multitable

import (
	"testing"

	"github.com/ebb-data/ebb/internal/testbackend"
)

// TestPebble runs in parallel with the remote variants, so that its CPU
// fills their waits on their servers instead of coming before them.
func TestPebble(t *testing.T) {
	t.Parallel()
	runSuite(t, backend{open: testbackend.Pebble})
	// The embedded backend reads items one by one by default; the parallel
	// reads remote backends use are tested here too.
	t.Run("ParallelReads", func(t *testing.T) {
		runSuite(t, backend{open: testbackend.Pebble, readParallelism: 8})
	})
	// Puts as on a store without guarded batches (entry, then item), so
	// that path is tested without a remote backend too.
	t.Run("Separate", func(t *testing.T) {
		runSuite(t, backend{open: testbackend.Pebble, separate: true})
	})
}

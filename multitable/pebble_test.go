package multitable

import "testing"

func TestPebble(t *testing.T) {
	runSuite(t, backend{open: pebbleMem})
	// The embedded backend reads items one by one by default; the parallel
	// reads remote backends use are tested here too.
	t.Run("ParallelReads", func(t *testing.T) {
		runSuite(t, backend{open: pebbleMem, readParallelism: 8})
	})
}

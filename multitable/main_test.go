package multitable

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: listings read items
// in parallel and must wait for every reader they start.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

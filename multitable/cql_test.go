package multitable

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql/cqltest"
)

// TestCQL runs the behaviour suite on the CQL backend at EBB_CQL_HOSTS (a
// local Apache Cassandra under `make test`) when EBB_TEST_BACKENDS selects
// cql, and then fails, never skips, when no cluster is configured.
func TestCQL(t *testing.T) {
	t.Parallel()
	cqltest.Require(t)
	runSuite(t, backend{open: func(t testing.TB, now func() time.Time) store.Store { return cqltest.New(t, now) }})
}

package expiry

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql/cqltest"
)

// TestCQL runs the expiry suite on the CQL backend at EBB_CQL_HOSTS (a
// local Apache Cassandra under `make test`) when EBB_TEST_BACKENDS selects
// cql, and then fails, never skips, when no cluster is configured. Counts are scaled as for the DynamoDB
// emulators: every window costs one query per shard.
func TestCQL(t *testing.T) {
	t.Parallel()
	cqltest.Require(t)
	runSuite(t, func(t testing.TB, now func() time.Time) store.Store { return cqltest.New(t, now) }, suiteConfig{
		massRows: 2000,
		downtime: 10 * time.Minute,
		catchUp:  Options{Window: 5 * time.Second, Shards: 4},
		parallel: true,
	})
}

package cql_test

import (
	"testing"

	"github.com/ebb-data/ebb/store/cql/cqltest"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestConformance runs the shared store suite against the cluster in
// EBB_CQL_HOSTS (scripts/with-cassandra.sh starts an Apache Cassandra node);
// each subtest gets a Store in a keyspace of its own, dropped when the
// subtest ends. It runs when EBB_TEST_BACKENDS selects cql, and then
// fails, never skips, without the variable.
func TestConformance(t *testing.T) {
	cqltest.Require(t)
	storetest.Run(t, storetest.Of(cqltest.New))
}

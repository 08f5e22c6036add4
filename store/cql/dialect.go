package cql

import (
	"context"
	"errors"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Provider is the kind of cluster a Store talks to. The three speak the
// same CQL for data; they differ in table options, in how schema changes
// complete, in capacity settings and in what they report about sizes.
type Provider uint8

// Providers.
const (
	// Cassandra is Apache Cassandra (and anything else that answers like
	// it).
	Cassandra Provider = iota
	// ScyllaDB is ScyllaDB, detected by its system.scylla_local table.
	ScyllaDB
	// Keyspaces is Amazon Keyspaces, detected by its system_schema_mcs
	// keyspace. Tables are created and dropped asynchronously, need TTL and
	// client-side timestamps switched on per table, and have capacity modes.
	Keyspaces
)

func (p Provider) String() string {
	switch p {
	case ScyllaDB:
		return "scylladb"
	case Keyspaces:
		return "keyspaces"
	}
	return "cassandra"
}

// Batch limits per provider. Keyspaces allows at most 30 statements in a
// batch. Cassandra and ScyllaDB have no statement limit, but a batch of one
// partition is one storage mutation, which must stay under half a commit
// log segment (16 MiB by default); 64 statements of at most a row each keep
// well inside it while amortizing the round trip.
const (
	keyspacesBatchStatements = 30
	defaultBatchStatements   = 64
	// maxMutationBytes bounds the size of one atomic batch on Cassandra and
	// ScyllaDB (half the default 32 MiB commit log segment, less slack).
	maxMutationBytes = 15 << 20
)

// batchStatements is the most statements sent in one batch.
func (p Provider) batchStatements() int {
	if p == Keyspaces {
		return keyspacesBatchStatements
	}
	return defaultBatchStatements
}

// detectProvider asks the cluster what it is: a table only Keyspaces has,
// then one only ScyllaDB has. A query refused because the table does not
// exist means "not that one"; any other failure is returned.
func detectProvider(ctx context.Context, s *gocql.Session) (Provider, error) {
	probes := []struct {
		p    Provider
		stmt string
	}{
		{Keyspaces, `SELECT keyspace_name FROM system_schema_mcs.keyspaces LIMIT 1`},
		{ScyllaDB, `SELECT key FROM system.scylla_local LIMIT 1`},
	}
	for _, pr := range probes {
		err := s.Query(pr.stmt).Consistency(gocql.One).Idempotent(true).ExecContext(ctx)
		if err == nil {
			return pr.p, nil
		}
		var inv *gocql.RequestErrInvalid
		var syn *gocql.RequestErrSyntax
		var unauth *gocql.RequestErrUnauthorized
		if errors.As(err, &inv) || errors.As(err, &syn) || errors.As(err, &unauth) {
			continue
		}
		return Cassandra, err
	}
	return Cassandra, nil
}

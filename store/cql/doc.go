// Package cql is the ebb backend for CQL clusters: Apache Cassandra,
// ScyllaDB and Amazon Keyspaces, on the Apache Cassandra Go driver. Open
// detects which of the three it talks to (Provider) and adapts table
// options, schema waits, capacity and size estimates; data statements are
// the same everywhere.
//
// # Layout
//
// An ebb table is a CQL table of the same name in Options.Keyspace, with
// the spec's partition key, its clustering columns in the spec's
// CLUSTERING ORDER, and typed value columns (text, bigint, timestamp,
// blob). Beside them, "_x" holds the row marker's expiry and "_e_<col>"
// each value's expiry, in Unix milliseconds (see schema.go). Rows are read
// with native range restrictions on the clustering columns, so order and
// paging are CQL's own, and the page token is the encoded clustering key
// of the last row (see read.go). Specs live in a catalog table (see
// catalog.go). Names starting with "ebb__" are the backend's own.
//
// # Expiry
//
// Expiry is resolved on read against Options.Now from the millisecond
// columns, exactly, so an expired row is never returned. Every cell also
// carries USING TTL, computed from the Store's clock (CQL TTLs are
// relative), rounded up and lengthened by Options.TTLMargin, as a physical
// backstop that never removes what ebb still considers live (see ttl.go).
// A table's DefaultTTL becomes its default_time_to_live. On Keyspaces, TTL
// (and client-side timestamps) are switched on per table with
// CUSTOM_PROPERTIES. On Cassandra and ScyllaDB each table also gets the
// compaction and gc_grace_seconds of its role (list version, expiry index,
// shard, shared; see tableopts.go), so that expired data leaves the disk
// soon after it expires where the role allows; Options.TableOptions
// overrides them.
//
// # Writes
//
// Every statement carries an explicit write timestamp, one per mutation in
// batch order, so a later mutation of a row wins and a retried write stores
// the same cells. The statements of one partition (a row and its index
// entries share the partition key) form one storage mutation, so a
// single-partition batch is atomic; see write.go for the limits.
// DeleteIfExpired reads the row and deletes it with a tombstone stamped
// with the newest write time it read, so a row extended meanwhile survives
// (see die.go for why this beats a lightweight transaction here).
// Conditional mutations are lightweight transactions whose IF clauses
// test ebb's expiry columns, so an expired row counts as absent (see
// condition.go).
//
// # Indexes
//
// An ebb index is a companion table keyed by (partition, index, value,
// clustering), written with the row and verified against it on lookup, so
// an entry left behind by an update, delete or expiry is never returned;
// not a Cassandra secondary index (see index.go).
//
// # Failures
//
// Each data operation is bounded by Options.Timeout. Requests the cluster
// refused as overloaded, and reads and (timestamped, hence idempotent)
// writes that timed out, are retried with capped exponential backoff and
// jitter; what is left surfaces as store.ErrThrottled (overload) or
// store.ErrUnavailable (timeouts, nodes down or unreachable). A
// conditional write whose outcome the cluster left unknown (a Paxos
// phase timed out, or a proposal was accepted by fewer replicas than a
// quorum, which contention on three replicas produces) is not retried: a
// LOCAL_SERIAL read of the row settles it, since such a read completes or
// supersedes for good any Paxos round still open on the row, and the
// write is recognised by its effect (an upsert by a random tag it adds to
// the row's "_w" set in the same round, a delete by the row or cells
// being gone). So the contract holds on a cluster too: success or
// store.ErrConflict, store.ErrUnavailable only when that read fails as
// well, or on a table created before "_w" existed and on Keyspaces,
// where the write cannot be recognised (see condition.go). A missing table maps to
// store.ErrTableNotFound, size limits to store.ErrTooLarge.
package cql

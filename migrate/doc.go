// Package migrate moves a time-sharded index off a legacy table with zero
// downtime: the rollout of dual writes, ramped reads, merged reads and
// cutover that teams otherwise write by hand.
//
// A legacy source is one table that already holds the index's events and
// expires them by native TTL: an ebb table in the embedded layout (see
// TableSource, which a JSONL import fills), or an existing DynamoDB or CQL
// (Cassandra, ScyllaDB, Keyspaces) table mapped onto the index's fields
// (packages migrate/dynamolegacy and migrate/cqllegacy). ebb writes to a
// legacy table only when Settings.WriteLegacy asks it to, and never drops
// it.
//
// A migrating index is in one phase at a time (see Phase): shadow-write,
// shadow-read, merged-read, cutover. The Service installs itself as the
// index service's timeseries.Router, so the index's usual Put and Query
// follow the phase; CheckTransition holds the rules for changing it.
// Backfill copies live legacy rows into their shards, resumably, from a
// durable checkpoint in ebb_meta.
package migrate

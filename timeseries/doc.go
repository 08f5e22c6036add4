// Package timeseries is ebb's time-sharded index: events keyed by
// (index_id, timestamp, event_id) that expire after a retention, stored one
// table ("shard") per time bucket so that expiring a bucket is dropping a
// table instead of deleting every row.
//
// The Service is the query router. On the write path it derives each
// event's shard (floor(ts / table_bucket)) and partition bucket
// (floor(ts / partition_bucket)) and writes one batch per shard; on the read
// path it visits shards, then partition buckets, in the requested order and
// stops as soon as it has the rows asked for. Expiry is read-resolved and
// exact: an event whose timestamp + retention <= now is never returned,
// whether or not its shard has been dropped yet. Package shardmgr creates
// and drops the shards; the Service drives it.
//
// A write never creates a shard: an event whose shard does not exist is
// refused with ErrNoShard and nothing of it is written, since the manager
// keeps shards a runway ahead of now. A write of an event already past
// retention is refused too. Writes are idempotent upserts, so a retried
// batch leaves the same rows. The package imports store, never a backend.
package timeseries

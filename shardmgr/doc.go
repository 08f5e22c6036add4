// Package shardmgr manages the tables of a time-sharded index: one table
// ("shard") per time bucket, created ahead of time and dropped once every
// row in it is past retention, so that expiring data is dropping a table
// instead of paying a delete per row.
//
// It works as a reconcile loop in four steps:
//
//	observe  list the index's shard tables and the manager's own records
//	         (RunOnce lists every table and every record once per pass)
//	desire   from now: every shard that is not expired, up to runway ahead
//	plan     the difference as a Plan, a value of Actions with reasons
//	apply    carry out each Action independently
//
// Plan is a pure function of (Config, now, observed shards, last run), so
// planning is tested from text files without a backend and a plan can be
// printed before it is applied. Manager runs the loop.
//
// Shard tables are named "{index}_{unix seconds of shard start}". Tables
// with the index's prefix that do not parse as one of its shards are left
// alone and reported; tables of another index whose name extends this one
// ("events_eu_1719446400" beside index "events") are not this index's
// business and are skipped silently.
//
// A shard [start, end) is dropped only once end + retention <= now, so no
// live row is ever dropped; a clock that jumped forward more than
// MaxClockJump since the last run stops drops until a plan allows it, and
// drops per run are capped.
// When several processes share a backend, Options.Fence (the shard-manager
// lease's fence) is checked before each action, so a manager that lost its
// lease applies nothing more. Each action is idempotent and independent:
// one failure does not stop the rest.
//
// A drop passes two hooks, in this order: Options.PrepareDrop, before the
// run applies anything and after a fence check (the archive of the shard
// is made there), then Options.BeforeDrop, inside apply after the drop's
// own fence and just before DropTable, handed the Prepared the first
// returned (the log of expirations records the drop there, naming the
// archive). An error from either holds the drop until a later run.
package shardmgr

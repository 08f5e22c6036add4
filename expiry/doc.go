// Package expiry physically deletes rows soon after they expire, on every
// backend.
//
// Read-resolved expiry (package store) already hides an expired row, but
// the row still costs storage until something removes it, and native TTLs
// are slow: DynamoDB deletes "within a few days", Keyspaces "within 10
// days". This package removes such rows within seconds. It has two parts.
//
// # The decorator
//
// Wrap returns a store.Store that, for every upsert carrying an expiry (its
// own, a cell's, or the table's default TTL), first records an entry in the
// expiry index table IndexTable and then writes the row. A cell delete is
// indexed too, since removing the one cell that kept a row alive leaves it
// dead at once. Entries are keyed
//
//	partition  (window, shard)            window = start of the Window the entry is due in
//	clustering (due, table, id)           id = hash of the row's encoded key
//	values     (pk, ck, expires_at)       the row's encoded keys and its expiry
//
// so that one sweep of a window reads Shards small partitions rather than
// one hot one. The index entry is written before the row: a crash in between
// leaves an entry for a row that does not exist, which the sweeper removes
// at no harm, rather than a row nobody will ever delete.
//
// An entry's due time is its expiry, but never earlier than Grace after the
// write started. The sweeper therefore never looks for an entry before the
// row it points at has landed, and a window it has finished can no longer
// receive entries (writes slower than Grace re-index themselves). An expiry
// that comes from the table's default TTL is resolved again by the backend
// against its own reading of the clock, so its entry is due Grace later.
//
// # The sweeper
//
// Each writer also records a due marker for every window it puts entries
// in, before the entries (marks.go). Each pass reads the first page of
// markers, sweeps every marked window up to the one containing now (the
// current window only up to now), and removes the markers of the windows
// it finished; the first marker past now is when the next pass is due
// (Sweeper.Next), and a write through this process marking an earlier
// window wakes the sweeper (Sweeper.Wake). While rows keep falling due,
// the next pass comes once about a delete batch more is due at the rate
// the last pass found them, between SweepInterval/10 and SweepInterval.
// An idle sweeper thus reads one
// small page per IdleInterval and writes nothing. A sweeper that was down
// for an hour catches up on restart; a tick cadence that is not a multiple
// of the window misses nothing.
//
// An index created before markers existed keeps a durable watermark in
// store.MetaTable (kind "sweeper"): the start of the first window not yet
// completely swept. Its passes sweep every window from the watermark up to
// the one containing now, then advance the watermark past the windows
// they finished.
//
// Rows are removed with store.DeleteIfExpired, which the backend applies
// only if the row has no live content at that moment, so a row whose expiry
// was extended or removed after it was indexed survives (the extension wrote
// its own entry); the stale entry is then deleted. A window's index
// partitions are read together, a page of each per round, so that the
// rows of a round are all the rows falling due together: deletes go out in
// batches of the backend's preferred size, grouped by table and in the
// order of the rows' keys (cheaper to apply than the index's order, and
// on the embedded backend a step from one row to the next), retried with
// exponential backoff on store.ErrThrottled and store.ErrUnavailable, and
// optionally paced to MaxDeletesPerSecond.
//
// Options.Removed, when set, is told of each batch of rows just before
// their conditional deletes (removed.go): the rows a Get finds gone (a row
// still live survived an extension and is left out), each with an identity
// and whether an earlier pass may have reported it already. ebb.DB's log
// of expirations records them there, before the delete, so that a crash
// in between repeats the report rather than losing it.
//
// Rows can be left out per write, with store.Mutation.Expiry: only the
// swept modes (store.ExpiryDefault, store.ExpirySweep) are indexed, while
// store.ExpiryNative rows are left to the backend's TTL and
// store.ExpiryDrop rows to their table's drop, so a list feature or shared
// table in those modes costs the sweeper nothing. Whole tables can be left
// out with Options.Exclude (time-sharded index shards expire by dropping
// whole tables); IndexTable and store.MetaTable are never indexed.
package expiry

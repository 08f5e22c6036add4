// Package multitable keeps many small logical tables in one physical table
// of a store.Store, each tenant strictly inside its own.
//
// A team with hundreds of tiny tables pays a provider's minimum per table;
// the same data multiplexed into one physical table pays it once. The
// danger of multiplexing is one tenant meeting another: the classic
// tableID + "_" + key layout lets tenant "a" with key "b_x" and tenant
// "a_b" with key "x" share a row. Here the logical table name, its
// generation and the item key are separate typed key columns of the
// physical table, encoded by package keyenc, so two different (table, key)
// pairs can never produce the same stored key, whatever bytes they hold.
//
// # Registry
//
// Logical tables are documents of kind "table" in store.MetaTable: name,
// default TTL, bucket width and generation. Creating an identical table
// again is a no-op; another default TTL or expiry mode changes the record
// (a compare-and-swap) for the puts that follow, and items already put
// keep the expiry they were written with.
// Deleting a table purges its rows and leaves a tombstone, so a table
// re-created under the same name gets the next generation and starts empty
// even if a write to the old one was still in flight.
//
// # Layout
//
// Everything lives in the physical table ItemsTable, with partition key
// (tbl, gen, kind, part) and clustering key (ts, key, n). Three kinds of
// rows share it:
//
//	item    (tbl, gen, kindItem, hash(key))   (0, key, 0)            at, attrs, size=version
//	entry   (tbl, gen, kindEntry, bucket)     (timestamp, key, ver)  size, at=written
//	bucket  (tbl, gen, kindBucket, 0)         (bucket start, "", n)  -
//
// An item row is found by its key alone; the key hash only spreads one
// logical table over many partitions (it is not relied on for identity).
// It carries the version of its last write, a random number, in the
// column where entries keep sizes. An entry row lists the item by
// (timestamp, key) in the partition of its time bucket, so a listing reads
// entries in order and stops as soon as the page is full; its last
// clustering column is the version of the put that wrote it, so every
// write attempt's entry is a row of its own. Bucket rows are a directory of the occupied buckets, so a
// listing jumps from one occupied bucket to the next however sparse the
// items are: the cost of a page is proportional to the page, not to the
// table, to the time span, or to other tenants' data.
//
// # Expiry
//
// An item's TTL (its own, else its table's default; none when zero) gives
// an absolute expiry at write time. The item row and its entry carry the
// same expiry as Mutation.ExpiresAt, so reads hide them to the millisecond,
// and the table's expiry mode (Config.Expiry) as Mutation.Expiry, so that
// the expiry decorator deletes them physically (sweep) or leaves them to
// the backend's TTL (native). A logical table cannot take drop
// (ErrDropMode): its rows share ItemsTable, which is never dropped. A bucket row is written
// per (bucket, expiry granule) and expires at the end of its granule, so it
// outlives every entry it announces without any read-modify-write; bucket
// rows of entries without expiry never expire and are removed by listings
// that find their bucket empty.
//
// # Concurrency
//
// Writes to an item row are guarded (store.Condition): a put or delete
// applies only if the row still holds the version it read, or is still
// absent, so writers of one key are serialized without locks, on every
// replica. Entries and items live in different partitions and are written
// apart, so listings are kept correct by ordering, guards and
// verification. The invariant is: a live item has an entry at its
// timestamp that expires no earlier than the item, announced by a bucket
// row that expires no earlier than the entry.
//
//   - A row that another row depends on is written first: bucket row, then
//     entry, then item. A put reads the item once, writes its own entry,
//     then the item guarded by what it read; if the guard fails, it
//     removes its entry and starts over. Once the item is written, the
//     entry of the item it replaced is removed. Nobody else writes a
//     put's entry, so its expiry is the put's, and it is removed only
//     once its item is gone: a put costs one read and two writes (three
//     when it replaces an item).
//   - On a store that applies a guarded batch whole or not at all
//     (store.Capabilities.GuardedBatch: the embedded backend), the entry
//     (and, when this process has not written it yet, the bucket row) and
//     the guarded item write go in one batch: the row another depends on
//     still never lands without it, a put costs one read and one write,
//     and an attempt that loses the race writes nothing to remove.
//   - A guarded write refused because a retried request had already
//     applied it is told apart from a lost race by reading the version
//     back.
//   - Listings verify each entry against its item row (same timestamp,
//     item live) and list the item once however many entries it has. An
//     entry that lists nothing may belong to a put still in flight, so a
//     listing leaves it alone while it is young (30 s: puts finish well
//     within that, so listings never make them start over) and removes it
//     only after fencing the item row: a guarded write
//     of a new version (or, where there is no item, of a fence row that
//     expires with the entry). The in-flight put's guard then fails and it
//     starts over with a new entry.
//   - After writing an entry without expiry (alone or with its item), the
//     writer reads its bucket row back; a listing that retires an empty
//     bucket's row reads the bucket again afterwards and restores the row
//     if an entry landed.
//     Either the remover's re-check sees the writer's row, or the
//     writer's check sees the removal.
//
// Conditional writes build on the same guard. An item's version (the
// random number of its last write, Item.Version) is what callers compare:
// a create-only put, a put, patch or delete at a version, and a patch's
// merge are all decided on the item row as read and written guarded by
// it (writeItem), so the decision holds atomically with the write; a lost
// race re-reads and decides again, and a precondition that fails is
// ErrPrecondition with nothing written. Versions are random, not counted,
// so that a writer told its guard failed can tell by reading the version
// back whether its own retried write is the one that landed. A listing
// that fences a live item gives it a new version with the same content,
// so a caller holding the old one sees ErrPrecondition and reads again.
//
// A race or a crash can leave only garbage (an entry whose item moved or
// vanished, an entry outliving its item), never a listing that misses a
// live item. Items written before items carried versions are guarded by
// their timestamp, and listings skip, but never fence, their stale
// entries.
package multitable

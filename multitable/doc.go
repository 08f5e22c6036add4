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
// again is a no-op; a different configuration is refused with ErrConflict.
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
//	item    (tbl, gen, kindItem, hash(key))   (0, key, 0)            at, attrs
//	entry   (tbl, gen, kindEntry, bucket)     (timestamp, key, 0)    size
//	bucket  (tbl, gen, kindBucket, 0)         (bucket start, "", n)  -
//
// An item row is found by its key alone; the key hash only spreads one
// logical table over many partitions (it is not relied on for identity).
// An entry row lists the item by (timestamp, key) in the partition of its
// time bucket, so a listing reads entries in order and stops as soon as the
// page is full. Bucket rows are a directory of the occupied buckets, so a
// listing jumps from one occupied bucket to the next however sparse the
// items are: the cost of a page is proportional to the page, not to the
// table, to the time span, or to other tenants' data.
//
// # Expiry
//
// An item's TTL (its own, else its table's default; none when zero) gives
// an absolute expiry at write time. The item row and its entry carry the
// same expiry as Mutation.ExpiresAt, so reads hide them to the millisecond
// and the expiry decorator deletes them physically. A bucket row is written
// per (bucket, expiry granule) and expires at the end of its granule, so it
// outlives every entry it announces without any read-modify-write; bucket
// rows of entries without expiry never expire and are removed by listings
// that find their bucket empty.
//
// # Concurrency
//
// The store offers neither conditional writes nor transactions across
// partitions, so listings are kept correct by ordering and verification.
// The invariant is: a live item has an entry at its timestamp that expires
// no earlier than the item, announced by a bucket row that expires no
// earlier than the entry.
//
//   - A row that another row depends on is written first: bucket row, then
//     entry, then item. A put never shortens the entry of the item it
//     replaces, so a put that fails half way leaves the old item listed.
//   - After writing an item, and after removing an entry, the writer
//     settles the entry: it reads the item as it now is and, if the entry
//     is missing or expires too early, rewrites it, and checks again.
//   - After writing an entry without expiry, the writer reads its bucket
//     row back; a listing that retires an empty bucket's row reads the
//     bucket again afterwards and restores the row if an entry landed.
//
// Either the remover's re-check sees the writer's row, or the writer's
// check sees the removal, so a race can leave only garbage (an entry whose
// item moved or vanished, an entry outliving its item), never a listing
// that misses a live item. Listings verify each entry against its item row
// (same timestamp, item live), skip garbage and remove it.
package multitable

// Package pebble is ebb's embedded backend: a store.Store on Pebble, the
// default that runs with zero set-up.
//
// Every table gets a numeric ID that is never reused. Keys are
//
//	tableID (8 bytes) | partition tuple | 0x01 | clustering tuple   -> row fragment
//	tableID (8 bytes) | partition tuple | 0x02 | index | value | clustering -> empty
//
// so a table is one contiguous key range (DropTable excises it, freeing the
// disk at once) and a partition is one contiguous range (DeletePartition is a
// range deletion). Table ID 0 holds the catalog. Index entries are written
// blind and verified against the row when read, so an update or delete never
// needs a read first; stale entries are never returned.
//
// Expiry is resolved on read: a row or cell whose expiry is at or before
// now is never returned, whatever is still on disk. The store is one
// process by construction (Pebble's directory lock). Besides store.Store
// it implements the optional store.DeferredWriter, store.Checkpointer and
// store.HealthReporter, and its Scan adds up store.Query.Tally as it
// builds each row. After the disk fails a
// write or a sync, writes are refused and Health says so, rather than
// acknowledge what may not be durable; after Pebble finds a corrupt block,
// Health says so too, reads touching it fail and writes go on.
package pebble

// Package store is the contract every ebb backend implements and every ebb
// feature is written against.
//
// A Store holds tables. A table has a schema (TableSpec): one or more
// partition-key columns, zero or more clustering columns sharing one
// clustering order, value columns, an optional default TTL and optional local
// secondary indexes on one value column each. Rows live in partitions; within
// a partition rows are kept sorted by their clustering tuple.
//
// # Values
//
// Column values are Go values of exactly these types:
//
//	TypeText      string (valid UTF-8)
//	TypeInt64     int64
//	TypeTimestamp time.Time, stored with millisecond precision in UTC
//	TypeBytes     []byte
//
// A nil value in a Row means the column is absent (never written, deleted or
// expired).
//
// # Expiry
//
// Every cell (one value column of one row) and every row carries an optional
// absolute expiry. Expiry is resolved on read against the Store's clock: a
// cell or row whose expiry is at or before now is never returned, whatever is
// still on disk (expiry == now means gone). A row is live while its row marker
// or any of its cells is live. Physical removal is the job of the expiry
// package and of DropTable; backends may also use native TTL as a backstop.
//
// # Concurrency and ownership
//
// A Store is safe for concurrent use by many goroutines. Values passed in are
// not retained after a call returns; rows returned are owned by the caller.
// Writes are idempotent upserts: retrying a failed Write is always safe.
//
// # Errors
//
// Backends map their native errors onto the sentinels in errors.go; callers
// match them with errors.Is. A refused Write writes nothing.
//
// # Implementing a backend
//
// Package kit holds what backends share to validate and resolve batches
// and encode keys (package keyenc), so that bad input is refused the same
// way everywhere; package storetest is the conformance suite every backend
// passes.
package store

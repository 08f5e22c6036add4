// Package store is the contract every ebb backend implements and every ebb
// feature is written against.
//
// A Store is a Catalog (create, drop, list and look up tables, capacity,
// statistics) and a Data part (write, get, scan, index query, partition
// delete). Backends implement Scan alone for range reads; package kit's
// Query pages through it and decodes whole Rows with the table's Spec.
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
// A Mutation's Expiry (an ExpiryMode) says which removes the row: the
// expiry package's sweeper (the default), native TTL alone, or only the
// table's drop, for which the remote backends write no native TTL.
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
// # Optional interfaces and wrappers
//
// A backend may also implement optional interfaces (DeferredWriter,
// Checkpointer, HealthReporter). A decorator (the expiry and meter
// packages' Stores) is a Store over another and implements Wrapper, whose
// Unwrap returns the Store below. Callers find an optional interface with
// As, which walks that chain and returns the first Store that implements
// it, never with a type assertion on the Store they hold.
//
// The rule for a wrapper: an optional interface that writes (DeferredWriter)
// must be implemented by every wrapper that has to see every write, calling
// through to the Store below, so that As stops at it and no write goes
// around it; the expiry decorator (which indexes rows with expiries) and
// the meter (which counts units) both do. A read-only or administrative
// interface (Checkpointer, HealthReporter, a backend's concrete type) is
// not implemented by the wrappers, and As finds it on the Store below.
// A wrapper's Close closes the Store it wraps, so closing the outermost
// Store of a chain closes every layer once, outermost first.
//
// # Implementing a backend
//
// Package kit holds what backends share to validate and resolve batches
// and encode keys (package keyenc), so that bad input is refused the same
// way everywhere; package storetest is the conformance suite every backend
// passes.
package store

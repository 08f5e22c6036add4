// Package remote is the core every remote backend (store/cql,
// store/dynamo) shares: what an operation on a service reached over the
// network means the same on each of them, written once.
//
// What belongs here is what is identical in meaning for every remote
// backend, not what merely looks alike:
//
//   - Common, the options each has with one meaning (timeouts, retry
//     bounds, the native-TTL margin, the clock, the logger) and their
//     checks and defaults; each backend keeps its own default values.
//   - Core, which starts an operation: a closed Store refuses it, a caller
//     that has already given up does not start it, and it is bounded by
//     Timeout (data) or TableTimeout (tables, which wait for the service).
//     It also applies the contract's early outs: an empty Write and a
//     DropTable of a name that cannot be a table do nothing, a capacity
//     setting no provider accepts is refused before anything is sent.
//   - Tables, the cache of what a backend derives from a table's catalog
//     entry, read on a miss and evicted when the service says the table is
//     gone, so that a dropped table is never served from memory for long.
//     It also begins an operation on a table with its entry (Begin), and
//     gives the start every backend's Spec and Write share (Spec, Resolve).
//   - Metrics, the requests and latency every remote backend exports by
//     operation; the outcome labels and any further metrics stay with the
//     backend, because they name what its service reports.
//   - The error facts that hold for every transport: an error already
//     mapped onto a store sentinel passes through, a broken connection is
//     unavailability, a caller's own cancellation is not.
//   - The retry policy built from the options (internal/backoff), and the
//     bound on requests one call has in flight.
//
// What stays in a backend is its dialect: how it lays out rows and the
// catalog, which errors its service returns and which of them it retries
// (the CQL driver's error kinds, DynamoDB's error codes and unprocessed
// items), its outcome labels, and anything its service adds or lacks.
// A new remote backend embeds Common in its Options, holds a Core, a
// Tables and a Metrics, and writes only its dialect.
package remote

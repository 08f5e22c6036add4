// Package dynamo is the ebb backend for the DynamoDB API: AWS DynamoDB and
// ScyllaDB Alternator, tested against dynalite and Amazon's DynamoDB Local.
//
// # Layout
//
// Each ebb table is one DynamoDB table named TablePrefix + name, with a
// binary partition key pk and a binary sort key sk holding the
// store/keyenc encodings of the partition and clustering tuples.
// DynamoDB compares binary sort keys bytewise, so rows come back in
// clustering order and paging matches the embedded backend exactly;
// reversed queries use ScanIndexForward=false. Value cells, their expiries,
// the row marker and a native TTL attribute are item attributes (see
// item.go). Specs live in a catalog table (see catalog.go).
//
// # Expiry
//
// Expiry is resolved on read against the Store's clock from precise
// millisecond attributes, so an expired row is never returned. A native TTL
// attribute (epoch seconds, Options.TTLMargin after the last expiry of every
// part of the row, absent when some part never expires) is switched on with
// UpdateTimeToLive where the endpoint supports it, as a backstop: DynamoDB
// deletes expired items within days, on its own clock, and the margin keeps
// it from deleting a row that ebb's clock, running behind, still holds live.
// DeleteIfExpired is a conditional DeleteItem, so a row whose expiry was
// extended survives.
//
// # Writes
//
// A batch is validated whole with kit.ResolveBatch and measured against
// the 400 KB item limit before anything is sent, then folded per row (a
// later mutation of a row wins). Where the endpoint has TransactWriteItems,
// a single-partition batch of at most 100 mutations (and under its 4 MB
// limit) is one transaction and Capabilities reports AtomicPartitionBatch.
// Otherwise whole-row puts and deletes go out as BatchWriteItem chunks of
// 25, with UnprocessedItems re-sent under exponential backoff with jitter
// for a bounded number of attempts (then store.ErrThrottled), and partial
// writes as UpdateItem; everything is idempotent, so a failed Write can be
// retried. A conditional mutation (Mutation.If), alone in its batch, is one
// PutItem, UpdateItem or DeleteItem whose ConditionExpression compares the
// expiry attributes with the Store's clock, so the service checks liveness
// as the reader sees it, atomically with the write (see condition.go).
//
// # Indexes: local, not global
//
// An ebb index (lookup by value within one partition) is a local secondary
// index whose sort key is a digest of the value; readers check the value and
// its expiry in the projected attributes, so an entry left by an update,
// delete or expiry is never returned. A local index was chosen over a global
// one because a global index is only eventually consistent: a row written a
// moment ago could be missing from a lookup, or an overwritten value still
// found (the contract requires neither to happen), and a global index has
// its own throughput to manage. The price of a local index is DynamoDB's
// 10 GB limit on one item collection: the rows of one partition plus their
// index entries must stay under 10 GB, or writes to that partition fail
// with store.ErrTooLarge. ebb's partitions are time- or entity-bucketed and
// far smaller. Local indexes must be declared when a table is created
// (ebb specs never change) and a table has at most five.
//
// # Failures
//
// Each data operation is bounded by Options.Timeout (the SDK retries
// throttling and transport errors inside it). Unreachable endpoints and
// timeouts map to store.ErrUnavailable, throttling left after the retries to
// store.ErrThrottled, a missing table to store.ErrTableNotFound, size
// violations to store.ErrTooLarge. Nothing is cached but table specs, so a
// Store keeps working when the endpoint comes back.
package dynamo

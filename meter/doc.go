// Package meter counts, for every store operation ebb performs, the request
// units it would bill on each provider's request-unit model, so that a
// running deployment can tell what it spends and what native TTL would have
// cost instead.
//
// Wrap returns a store.Store decorator. It sits directly over the backend,
// below precise expiry, so that the expiry index's own writes and the
// sweeper's deletes are counted like any other traffic. It performs no I/O
// of its own on the data path: sizes are computed from the mutations and the
// rows that pass through it, and counters are atomic integers read by
// Usage and by the Prometheus collector at scrape time.
//
// # Provider models
//
// DynamoDB on-demand (ModelDynamoDB). An item's size is the sum of its
// attribute names and values: strings and binaries count their bytes, a
// number about one byte per two significant digits plus one
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
// The meter measures the item ebb's DynamoDB backend writes for a row (the
// attributes pk, sk, x, v<i>, e<i>, i<i> and ttl; see store/dynamo). A write
// costs one write request unit per 1 KB of item, rounded up; a
// TransactWriteItems (what a single-partition batch of 2 to 100 mutations
// becomes) costs two per 1 KB. A strongly consistent read costs one read
// request unit per 4 KB read, rounded up, at least one; a Query sums the
// sizes of the items it returns before rounding
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
// TTL deletes are free.
//
// Amazon Keyspaces (ModelKeyspaces). A row's encoded size, as reads and
// writes are billed, is each partition-key column's value stored twice plus
// its column identifier and 3 bytes, each clustering column's value stored
// twice plus its identifier and 1 byte per 5 bytes of value, and each
// regular cell's value plus its identifier (1 byte up to 62 columns) and
// its client-side timestamp (20 bytes, the low end of AWS's 20-40), ebb's
// expiry columns "_x" and "_e_<col>" included; the 100 bytes of row
// metadata count for storage only, and the TTL metadata, whose size AWS
// does not give, is not counted
// (https://docs.aws.amazon.com/keyspaces/latest/devguide/calculating-row-size.html,
// https://docs.aws.amazon.com/keyspaces/latest/devguide/client-side-timestamps-how-it-works.html).
// keyspacesRowBytes (keyspaces.go) is the one place it is computed.
// A write costs one write request unit per 1 KB; a LOGGED batch (what ebb's
// CQL backend sends for two or more statements of one partition) writes
// every row twice, once to prepare and once to commit
// (https://docs.aws.amazon.com/keyspaces/latest/devguide/batchStatements.html).
// A read at LOCAL_QUORUM costs one read request unit per 4 KB returned,
// rounded up, at least one. A TTL delete is billed per KB of the row it
// removes (https://docs.aws.amazon.com/keyspaces/latest/devguide/TTL.html).
//
// # Native TTL, counterfactually
//
// ebb expires data by dropping whole shards and by its own sweeper, so the
// provider's TTL deletes never happen. To tell what they would have cost,
// the meter counts UnitNativeTTLDelete for every upsert that native TTL
// would eventually delete: rows with an expiry of their own or from their
// table's default TTL, and every row of an index shard (which native TTL
// would expire one by one at the end of retention). An upsert that
// overwrites a row counts again, so the figure is an upper bound when rows
// are rewritten.
//
// # What is not measured
//
// The meter sees requests, not the provider's storage. A delete is counted
// at the size of its key, since the meter does not read the row it
// removes (DynamoDB and Keyspaces bill a delete by the deleted row's size,
// so this is a lower bound). An update that touches some columns of a row is
// counted at the size of what it writes. A Query is counted by the rows it
// returns, not by expired rows the backend stepped over. DeletePartition is
// counted as one read and one write unit. Table creation, drops, listings,
// capacity changes and statistics are control-plane calls, free on both
// providers, and counted as requests only. The CQL backend's companion
// index rows are not modelled.
package meter

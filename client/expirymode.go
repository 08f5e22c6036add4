package client

// ExpiryMode says how a list feature's or shared table's expired rows
// leave the disk (the "expiry" field of their PUT body and GET answer).
// Reads hide expired rows to the millisecond in every mode; docs/api.md
// and docs/cost.md compare the modes.
type ExpiryMode string

// Expiry modes.
const (
	// ExpirySweep: the server's sweeper deletes each row within seconds
	// of its expiry.
	ExpirySweep ExpiryMode = "sweep"
	// ExpiryNative: the backend's own TTL removes the row (DynamoDB within
	// days, Cassandra and ScyllaDB at compaction); refused by a server on
	// the embedded backend.
	ExpiryNative ExpiryMode = "native"
	// ExpiryDrop: the row leaves the disk only with its table (deleting
	// the list feature version); refused for shared tables.
	ExpiryDrop ExpiryMode = "drop"
)

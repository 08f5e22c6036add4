package store

import "context"

// PartitionLister is an optional part of a Store: it lists the partitions
// of a table, a page at a time, so that a caller that must read a whole
// table (the archive of a shard before its drop) can page through it with
// Scan, one partition after another, without knowing its partition keys
// beforehand and without holding the table in memory. Callers find it
// with As; a backend without it cannot have whole tables read.
type PartitionLister interface {
	// Partitions hands fn the partition key of each partition of table
	// in the backend's order, at most limit (1..MaxLimit) of them, after
	// the one the page token after names (nil: from the first). It
	// returns the token of the next page, nil when none follows. A
	// partition whose rows are all deleted or expired may still be
	// listed; its Scan then returns no row.
	Partitions(ctx context.Context, table string, after []byte, limit int, fn func(partition []any) error) (next []byte, err error)
}

package store

import "context"

// RawRow is one live row as a Scan callback sees it: still encoded, so that
// a hot read path can take what it needs without a Row's allocations. It and
// every slice in it are valid only until the callback returns.
type RawRow struct {
	// Clustering is the row's encoded clustering key, in package keyenc's
	// encoding; DecodeClustering or keyenc decode it.
	Clustering []byte
	// Values holds one entry per value column, in TableSpec.Values order:
	// the live cell's payload (text and bytes as they are, int64 and
	// timestamps as 8 bytes big-endian, timestamps in Unix milliseconds),
	// or nil where the cell is absent or expired.
	Values [][]byte
}

// ScanTally is what a Scan handed out, added up as a metering decorator
// needs it: the rows, the lengths of their encoded clustering keys, the
// values present (not nil) and their lengths.
type ScanTally struct {
	Rows, ClusteringBytes, Values, ValueBytes int
}

// TallyScanner is implemented by a Store that can add up what its Scan
// hands out while it builds each row, for less than a decorator wrapping
// fn pays per row (the embedded backend). ScanTally is Scan, adding to t.
type TallyScanner interface {
	ScanTally(ctx context.Context, table string, q Query, fn func(*RawRow) error, t *ScanTally) (next []byte, err error)
}

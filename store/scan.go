package store

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
	// ExpiresAt is the row marker's expiry in Unix milliseconds; 0 when
	// it has none.
	ExpiresAt int64
}

// ScanTally is what a Scan handed out, added up as a metering decorator
// needs it: the rows, the lengths of their encoded clustering keys, the
// values present (not nil) and their lengths. Every backend's Scan adds to
// Query.Tally when it is set.
type ScanTally struct {
	Rows, ClusteringBytes, Values, ValueBytes int
}

// Add adds one row handed out to t.
func (t *ScanTally) Add(r *RawRow) {
	t.Rows++
	t.ClusteringBytes += len(r.Clustering)
	for _, v := range r.Values {
		if v != nil {
			t.Values++
			t.ValueBytes += len(v)
		}
	}
}

package meter

// Amazon Keyspaces' encoded row size, per AWS's "Estimate row size in
// Amazon Keyspaces"
// (https://docs.aws.amazon.com/keyspaces/latest/devguide/calculating-row-size.html),
// for a row as ebb's CQL backend lays it out (store/cql/schema.go). Every
// size the meter gives for Keyspaces comes from keyspacesRowBytes.
const (
	// keyspacesKeyMetadata is the metadata of each partition-key column
	// ("up to 3 bytes"; AWS says to count all 3).
	keyspacesKeyMetadata = 3
	// keyspacesTimestampBytes is a regular cell's client-side timestamp,
	// which every table ebb creates on Keyspaces stores ("approximately
	// 20-40 bytes", "How client-side timestamps work in Amazon Keyspaces"):
	// the lower bound, as the meter counts everything it cannot see.
	keyspacesTimestampBytes = 20
)

// The 100 bytes of metadata Keyspaces adds to every row count for storage
// only; reads and writes are not billed for them, so the meter, which
// counts request units, never adds them.

// keyspacesRowBytes is a row's encoded size on Keyspaces as reads and
// writes are billed by it:
//
//   - each partition-key column: its value stored twice, its column
//     identifier and keyspacesKeyMetadata;
//   - each clustering column: its value stored twice, its column
//     identifier, and 1 byte of metadata per 5 bytes of value;
//   - each regular cell: its value, its column identifier and its
//     client-side timestamp. ebb's rows hold, besides the spec's values,
//     the row marker's expiry "_x" and each value's expiry "_e_<col>"
//     (bigints, sized as numbers): callers count them as cells.
//
// pk and ck are the keys' value bytes (sized as keySizes' ks), over pkCols
// and ckCols columns; cells regular cells hold cellBytes of values; colID
// is the table's column identifier size. Sums over several rows of one
// table may be passed at once. Storage would add keyspacesRowMetadata per
// row and TTL metadata on tables with TTL on, whose size AWS does not give.
func keyspacesRowBytes(colID, pk, pkCols, ck, ckCols, cells, cellBytes int) int {
	return 2*pk + pkCols*(colID+keyspacesKeyMetadata) +
		2*ck + (ck+4)/5 + ckCols*colID +
		cellBytes + cells*(colID+keyspacesTimestampBytes)
}

// keyspacesColumnID is the size of a column identifier in a table of
// cols columns: 1 byte up to 62 columns, one more per 62 more.
func keyspacesColumnID(cols int) int { return max(1, (cols+61)/62) }

// keyspacesKeyBytes is the size of a row's primary key alone (a delete, an
// index entry's key), with column identifiers of 1 byte.
func keyspacesKeyBytes(partition, clustering []any) int {
	_, pk := keySizes(partition)
	_, ck := keySizes(clustering)
	return keyspacesRowBytes(1, pk, len(partition), ck, len(clustering), 0, 0)
}

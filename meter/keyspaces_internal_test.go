package meter

import "testing"

// TestKeyspacesRowBytes works AWS's rules ("Estimate row size in Amazon
// Keyspaces") out on rows of the shape of AWS's example, two int
// partition-key columns, two int clustering columns and a regular int
// column holding 1, 2, 3, 4 and 5 (each int 2 bytes: one per two
// significant digits, plus one), as ebb lays such a row out.
func TestKeyspacesRowBytes(t *testing.T) {
	for _, c := range []struct {
		name                                 string
		colID, pk, pkCols, ck, ckCols, cells int
		cellBytes, want                      int
	}{
		// Partition key: each column's 2 bytes twice, its 1-byte column
		// identifier and 3 bytes of metadata: 2*(2*2+1+3) = 16.
		{"partition key alone", 1, 4, 2, 0, 0, 0, 0, 16},
		// Clustering: 4 bytes of values twice, 1 byte per 5 bytes of them,
		// and the two identifiers: 8+1+2 = 11.
		{"primary key (a delete)", 1, 4, 2, 4, 2, 0, 0, 16 + 11},
		// The regular column, and ebb's "_x" and "_e_reg_col1" (expiries
		// in Unix ms, 8 bytes each): 2+8+8 bytes of values, and each cell
		// its identifier and a 20-byte client-side timestamp: 18+63 = 81.
		{"an upsert", 1, 4, 2, 4, 2, 3, 18, 16 + 11 + 81},
		// 63 columns or more take 2-byte identifiers: 2 more per key
		// column and cell.
		{"2-byte column identifiers", 2, 4, 2, 4, 2, 3, 18, 16 + 11 + 81 + 2 + 2 + 3},
		// A 1,000-byte clustering value: 2,000 stored, 200 of metadata.
		{"a long clustering key", 1, 4, 2, 1000, 1, 0, 0, 16 + 2000 + 200 + 1},
	} {
		if got := keyspacesRowBytes(c.colID, c.pk, c.pkCols, c.ck, c.ckCols, c.cells, c.cellBytes); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
	for cols, want := range map[int]int{1: 1, 62: 1, 63: 2, 124: 2, 125: 3, 186: 3, 187: 4} {
		if got := keyspacesColumnID(cols); got != want {
			t.Errorf("keyspacesColumnID(%d) = %d, want %d", cols, got, want)
		}
	}
	// The meter's sizing of a delete is this rule: keys of the example.
	if got := keyspacesKeyBytes([]any{int64(1), int64(2)}, []any{int64(3), int64(4)}); got != 16+11 {
		t.Errorf("keyspacesKeyBytes = %d, want %d", got, 16+11)
	}
}

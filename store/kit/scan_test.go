package kit

import (
	"context"
	"errors"
	"testing"

	"github.com/ebb-data/ebb/store"
)

// TestScanPageStopsWhenCancelled checks that ScanPage hands out no row
// once its context is done: a backend's Scan over a materialized page
// must not go on feeding a caller whose client has gone.
func TestScanPageStopsWhenCancelled(t *testing.T) {
	spec := &store.TableSpec{
		Name:         "t",
		PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
		Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
		Values:       []store.Column{{Name: "v", Type: store.TypeBytes}},
	}
	var page store.Page
	for i := range 100 {
		page.Rows = append(page.Rows, store.Row{Partition: []any{"p"}, Clustering: []any{int64(i)}, Values: []any{[]byte("x")}})
	}
	page.NextPageToken = []byte("more")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	next, err := ScanPage(ctx, spec, page, func(*store.RawRow) error {
		seen++
		if seen == 3 {
			cancel()
		}
		return nil
	}, nil)
	if !errors.Is(err, context.Canceled) || seen != 3 || next != nil {
		t.Fatalf("cancelled at row 3 of 100: %d rows, token %q, err %v; want 3 rows and context.Canceled", seen, next, err)
	}
	seen = 0
	var tally store.ScanTally
	if next, err := ScanPage(context.Background(), spec, page, func(*store.RawRow) error { seen++; return nil }, &tally); err != nil || seen != 100 || string(next) != "more" {
		t.Fatalf("uncancelled: %d rows, token %q, err %v", seen, next, err)
	}
	// Each row's clustering key is an int64's 8 bytes, its value "x".
	if want := (store.ScanTally{Rows: 100, ClusteringBytes: 800, Values: 100, ValueBytes: 100}); tally != want {
		t.Fatalf("tally %+v, want %+v", tally, want)
	}
}

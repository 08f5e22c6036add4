package pebble

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/store"
)

// TestUnsortedBatchKeepsLastWrite writes one batch whose rows are out of
// key order (applied sorted, see sortBatch) and name some rows more than
// once: every row holds what the batch wrote last to it.
func TestUnsortedBatchKeepsLastWrite(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, vfs.NewMem())
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	put := func(p string, seq int64, v string) store.Mutation {
		return store.Mutation{Partition: []any{p}, Clustering: []any{seq}, Cells: []store.Cell{{Column: "payload", Value: []byte(v)}}}
	}
	var batch []store.Mutation
	want := map[string]string{}
	for round := range 3 {
		for i := 9; i >= 0; i-- {
			p, seq := fmt.Sprintf("p%d", i%3), int64(i)
			v := fmt.Sprintf("v%d-%d", round, i)
			batch = append(batch, put(p, seq, v))
			want[fmt.Sprint(p, "/", seq)] = v
		}
	}
	// A delete in the middle of the batch, then the row written again.
	batch = append(batch, store.Mutation{Kind: store.DeleteRow, Partition: []any{"p1"}, Clustering: []any{int64(4)}})
	delete(want, "p1/4")
	batch = append(batch, store.Mutation{Kind: store.DeleteRow, Partition: []any{"p2"}, Clustering: []any{int64(5)}}, put("p2", 5, "again"))
	want["p2/5"] = "again"
	if err := s.Write(ctx, "events", batch); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		p, seq := fmt.Sprintf("p%d", i%3), int64(i)
		row, err := s.Get(ctx, "events", []any{p}, []any{seq})
		w, ok := want[fmt.Sprint(p, "/", seq)]
		switch {
		case !ok && err == nil:
			t.Errorf("%s/%d: got %q, want no row", p, seq, row.Values[0])
		case ok && err != nil:
			t.Errorf("%s/%d: %v, want %q", p, seq, err, w)
		case ok && !bytes.Equal(row.Values[0].([]byte), []byte(w)):
			t.Errorf("%s/%d: got %q, want %q", p, seq, row.Values[0], w)
		}
	}
}

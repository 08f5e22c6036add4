package pebble

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/store"
)

// TestPartitions: a table's partitions are listed once each, in key order,
// a page at a time, whatever the rows each holds, and none of another
// table's; a bad limit and a missing table are refused.
func TestPartitions(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	other := eventsSpec
	other.Name = "events_other"
	for _, spec := range []store.TableSpec{eventsSpec, other} {
		if err := s.CreateTable(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for p := range 250 {
		id := fmt.Sprintf("id-%04d", p)
		want = append(want, id)
		var batch []store.Mutation
		for r := range p%5 + 1 {
			batch = append(batch, store.Mutation{Partition: []any{id}, Clustering: []any{int64(r)}, Cells: []store.Cell{{Column: "payload", Value: []byte("x")}}})
		}
		if err := s.Write(ctx, eventsSpec.Name, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write(ctx, other.Name, []store.Mutation{{Partition: []any{"zzz"}, Clustering: []any{int64(0)}, Cells: []store.Cell{{Column: "payload", Value: []byte("x")}}}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	var after []byte
	pages := 0
	for {
		next, err := s.Partitions(ctx, eventsSpec.Name, after, 100, func(p []any) error {
			got = append(got, p[0].(string))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if next == nil {
			break
		}
		after = next
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("%d partitions in %d pages, want %d in 3", len(got), pages, len(want))
	}
	if _, err := s.Partitions(ctx, eventsSpec.Name, nil, 0, func([]any) error { return nil }); err == nil {
		t.Error("limit 0 accepted")
	}
	if _, err := s.Partitions(ctx, "missing", nil, 10, func([]any) error { return nil }); err == nil {
		t.Error("a missing table listed")
	}
	var _ store.PartitionLister = s
}

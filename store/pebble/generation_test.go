package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ebb-data/ebb/store"
)

// TestGenerationChangesOnEveryWrite: an upsert, a conditional delete and a
// partition's deletion each change the partition's generation, which is
// settled again once they return; a table dropped and created again under
// its name has other generations; a table that is gone has none.
func TestGenerationChangesOnEveryWrite(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	gen := func() store.Generation {
		t.Helper()
		g, err := s.Generation("events", []any{"p"})
		if err != nil {
			t.Fatal(err)
		}
		if !g.Settled() {
			t.Fatalf("%+v not settled with no write under way", g)
		}
		return g
	}
	row := []store.Mutation{{Partition: []any{"p"}, Clustering: []any{int64(1)}, Cells: []store.Cell{{Column: "payload", Value: []byte("x")}}}}
	steps := []struct {
		name string
		do   func() error
	}{
		{"upsert", func() error { return s.Write(ctx, "events", row) }},
		{"deferred upsert", func() error { return s.WriteDeferred(ctx, "events", row) }},
		{"delete if expired", func() error {
			return s.Write(ctx, "events", []store.Mutation{{Kind: store.DeleteIfExpired, Partition: []any{"p"}, Clustering: []any{int64(1)}}})
		}},
		{"delete partition", func() error { return s.DeletePartition(ctx, "events", []any{"p"}) }},
		{"drop and create", func() error {
			if err := s.DropTable(ctx, "events"); err != nil {
				return err
			}
			return s.CreateTable(ctx, eventsSpec)
		}},
	}
	for _, st := range steps {
		before := gen()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if after := gen(); after == before {
			t.Errorf("%s left the generation at %+v", st.name, after)
		}
	}
	// A write refused before it is applied (a bad row) leaves the
	// generation settled.
	bad := []store.Mutation{{Partition: []any{"p"}, Clustering: []any{"not an int"}}}
	if err := s.Write(ctx, "events", bad); err == nil {
		t.Fatal("a bad row was written")
	}
	_ = gen()
	if err := s.DropTable(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Generation("events", []any{"p"}); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("generation of a dropped table: %v, want ErrTableNotFound", err)
	}
}

// TestGenerationBracketsReads is the property readers rely on, under
// writes running all the while: when a settled generation is taken before
// a read and the same value is found after a second read, the two reads
// saw the same row.
func TestGenerationBracketsReads(t *testing.T) {
	ctx := context.Background()
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	write := func(n uint64) error {
		return s.Write(ctx, "events", []store.Mutation{{Partition: []any{"p"}, Clustering: []any{int64(1)},
			Cells: []store.Cell{{Column: "payload", Value: binary.BigEndian.AppendUint64(nil, n)}}}})
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		var err error
		for n := uint64(1); !stop.Load() && err == nil; n++ {
			err = write(n)
		}
		done <- err
	}()
	read := func() []byte {
		r, err := s.Get(ctx, "events", []any{"p"}, []any{int64(1)})
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Clone(r.Values[0].([]byte))
	}
	same, changed := 0, 0
	for range 20000 {
		g0, _ := s.Generation("events", []any{"p"})
		v0 := read()
		v1 := read()
		g1, _ := s.Generation("events", []any{"p"})
		if !g0.Settled() || g0 != g1 {
			changed++
			continue
		}
		same++
		if !bytes.Equal(v0, v1) {
			stop.Store(true)
			t.Fatalf("generation %+v held across reads of %x and %x", g0, v0, v1)
		}
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Both outcomes must have come up for the check to mean anything.
	if same == 0 || changed == 0 {
		t.Fatalf("generation held %d times and changed %d: the check needs both", same, changed)
	}
	t.Logf("generation held across %d read pairs, changed across %d", same, changed)
}

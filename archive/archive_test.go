package archive_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// TestExportStreamsRowGroups: an export writes its rows out a row group
// at a time once the writer's buffer reaches RowGroupBytes, instead of
// holding the whole object until the end; the object verifies and reads
// back row for row, and the export logs its progress every ProgressEvery
// rows.
func TestExportStreamsRowGroups(t *testing.T) {
	ctx := context.Background()
	st := testbackend.Pebble(t, nil)
	spec := store.TableSpec{
		Name:         "ev_1772582400",
		PartitionKey: []store.Column{{Name: "id", Type: store.TypeText}},
		Clustering:   []store.Column{{Name: "n", Type: store.TypeInt64}},
		Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
		NeverExpires: true,
	}
	if err := st.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	const parts, perPart = 4, 500
	payload := func(p, i int) []byte {
		// Distinct bytes per row, so that compression cannot hide the
		// buffer's size.
		rnd := rand.New(rand.NewPCG(uint64(p), uint64(i)))
		b := make([]byte, 512)
		for j := range b {
			b[j] = byte(rnd.Uint32())
		}
		return b
	}
	for p := range parts {
		var batch []store.Mutation
		for i := range perPart {
			batch = append(batch, store.Mutation{Partition: []any{fmt.Sprint("id", p)}, Clustering: []any{int64(i)},
				Cells: []store.Cell{{Column: "payload", Value: payload(p, i)}}})
		}
		if err := st.Write(ctx, spec.Name, batch); err != nil {
			t.Fatal(err)
		}
	}
	var logged bytes.Buffer
	dir := t.TempDir()
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	a, err := archive.New(archive.Options{Store: st, RowGroupBytes: 64 << 10, ProgressEvery: 500,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.ArchiveShard(ctx, loc, archive.Shard{Index: "ev", Table: spec.Name})
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows != parts*perPart || m.Verified.IsZero() {
		t.Fatalf("manifest %+v", m)
	}
	f, err := os.Open(filepath.Join(dir, "ev", spec.Name+".parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := parquet.OpenFile(f, m.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	// About 1 MB of payloads in 64 KB row groups.
	if n := len(pf.RowGroups()); n < 8 {
		t.Errorf("%d row groups in an object of %d bytes, want it written out every 64 KB", n, m.Bytes)
	}
	n := 0
	err = a.ReadRows(ctx, m, func(v []any) error {
		p, i := n/perPart, n%perPart
		if v[0] != fmt.Sprint("id", p) || v[1] != int64(i) || !bytes.Equal(v[2].([]byte), payload(p, i)) {
			return fmt.Errorf("row %d reads back as %v %v", n, v[0], v[1])
		}
		n++
		return nil
	})
	if err != nil || n != parts*perPart {
		t.Fatalf("read back %d rows: %v", n, err)
	}
	if got := strings.Count(logged.String(), `msg="archiving shard"`); got != parts*perPart/500 {
		t.Errorf("%d progress lines, want one every 500 rows:\n%s", got, logged.String())
	}
}

// TestArchiveAgainChecksTheObject: a shard archived before is not written
// again while its object still matches its manifest, but an object
// changed since (same size, one byte flipped) is found before the drop
// it would allow, and written again from the table.
func TestArchiveAgainChecksTheObject(t *testing.T) {
	ctx := context.Background()
	st := testbackend.Pebble(t, nil)
	spec := store.TableSpec{Name: "ix_3600", PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}},
		Clustering: []store.Column{{Name: "n", Type: store.TypeInt64}}, Values: []store.Column{{Name: "v", Type: store.TypeText}}, NeverExpires: true}
	if err := st.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var batch []store.Mutation
	for i := range 200 {
		batch = append(batch, store.Mutation{Partition: []any{"a"}, Clustering: []any{int64(i)}, Cells: []store.Cell{{Column: "v", Value: fmt.Sprint("value ", i)}}})
	}
	if err := st.Write(ctx, spec.Name, batch); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	a, err := archive.New(archive.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	sh := archive.Shard{Index: "ix", Table: spec.Name}
	first, err := a.ArchiveShard(ctx, loc, sh)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.ArchiveShard(ctx, loc, sh)
	if err != nil || !again.Verified.Equal(first.Verified) {
		t.Fatalf("archived again: verified at %s (first %s), %v; want the first archive kept", again.Verified, first.Verified, err)
	}
	object := filepath.Join(dir, "ix", spec.Name+".parquet")
	b, err := os.ReadFile(object)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xFF
	if err := os.WriteFile(object, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fixed, err := a.ArchiveShard(ctx, loc, sh)
	if err != nil {
		t.Fatal(err)
	}
	if fixed.Verified.Equal(first.Verified) {
		t.Fatal("a changed object was taken as verified")
	}
	n := 0
	if err := a.ReadRows(ctx, fixed, func([]any) error { n++; return nil }); err != nil || n != 200 {
		t.Fatalf("read back %d rows of the object written again: %v", n, err)
	}
}

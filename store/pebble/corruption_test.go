package pebble

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

// corruptRows is how many rows writeFlushed writes into each of two
// partitions, "a" and "b", each with a payload of corruptPayload random
// (incompressible) bytes, so that every row lands in the sstable verbatim.
const (
	corruptRows    = 200
	corruptPayload = 512
)

// corruptPayloadOf is the payload of row i of partition id: random bytes
// from a seed that names them, so that a test can find them in a file.
func corruptPayloadOf(id string, i int) []byte {
	r := rand.New(rand.NewPCG(uint64(len(id)), uint64(id[0])<<32|uint64(i)))
	b := make([]byte, corruptPayload)
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// writeFlushed creates the events table in a real store on disk under dir,
// writes partitions "a" and "b", flushes them into an sstable and closes
// the store.
func writeFlushed(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		for i := range corruptRows {
			if err := s.Write(ctx, "events", []store.Mutation{{Partition: []any{id}, Clustering: []any{int64(i)},
				Cells: []store.Cell{{Column: "payload", Value: corruptPayloadOf(id, i)}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// flipPayloadByte flips one byte, in the middle of the payload of row i of
// partition id, in the sstable under dir that holds it, and returns that
// sstable's path.
func flipPayloadByte(t *testing.T, dir, id string, i int) string {
	t.Helper()
	want := corruptPayloadOf(id, i)[200:232]
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range ssts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(b, want)
		if at < 0 {
			continue
		}
		b[at+16] ^= 0x40
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Fatalf("payload of %s/%d in none of %v", id, i, ssts)
	return ""
}

// syncLog is a slog handler collecting log lines for a test.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newSyncLog() *syncLog { return &syncLog{} }

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestCorruptSSTableServesTheRest flips one byte of a row's payload in a
// flushed sstable of a real store on disk and reopens it: the store must
// open, answer a read of the corrupt block with ErrUnavailable instead of
// ending the process, keep serving rows in other blocks, report itself
// unhealthy with the file and how to recover, still take writes, and
// survive the compactions that meet the corrupt block, and a restart.
func TestCorruptSSTableServesTheRest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFlushed(t, dir)
	bad := flipPayloadByte(t, dir, "b", corruptRows/2)

	for round := range 2 {
		logs := newSyncLog()
		s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatalf("round %d: open with a corrupt sstable: %v", round, err)
		}
		if err := s.Health(); err != nil && round == 0 {
			t.Fatalf("healthy before any read of the corrupt block: %v", err)
		}
		_, err = s.Get(ctx, "events", []any{"b"}, []any{int64(corruptRows / 2)})
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("round %d: read of the corrupt row: %v, want ErrUnavailable", round, err)
		}
		row, err := s.Get(ctx, "events", []any{"a"}, []any{int64(3)})
		if err != nil || len(row.Values) != 1 || !bytes.Equal(row.Values[0].([]byte), corruptPayloadOf("a", 3)) {
			t.Fatalf("round %d: read of a row in another block: %v, %v", round, row, err)
		}
		health := s.Health()
		if !errors.Is(health, store.ErrStorageFault) || !strings.Contains(health.Error(), filepath.Base(bad)) {
			t.Fatalf("round %d: Health after a corrupt block: %v, want ErrStorageFault naming %s", round, health, filepath.Base(bad))
		}
		if err := s.Write(ctx, "events", []store.Mutation{{Partition: []any{"b"}, Clustering: []any{int64(corruptRows/4 + round)},
			Cells: []store.Cell{{Column: "payload", Value: []byte("new")}}}}); err != nil {
			t.Fatalf("round %d: write after a corrupt block: %v, want it taken", round, err)
		}
		// The new row overlaps the corrupt sstable, so the compaction of
		// the two, which Pebble starts by itself, reads the corrupt block:
		// Pebble reports it and the compaction fails; the process goes on.
		if err := s.DB().Flush(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); s.DB().Metrics().Compact.FailedCount < 3; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: compactions did not meet the corrupt block 3 times in 10 s:\n%s", round, s.DB().Metrics())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := s.Get(ctx, "events", []any{"b"}, []any{int64(corruptRows/4 + round)}); err != nil {
			t.Fatalf("round %d: read of the new row: %v", round, err)
		}
		log := logs.String()
		for _, want := range []string{"on-disk corruption", filepath.Base(bad), "ebb restore"} {
			if !strings.Contains(log, want) {
				t.Errorf("round %d: log lacks %q:\n%s", round, want, log)
			}
		}
		if n := strings.Count(log, "on-disk corruption in"); n != 1 {
			t.Errorf("round %d: the corruption logged %d times, want once per file", round, n)
		}
		// Pebble retries the failing compaction many times a second; the
		// repeats are counted, not logged at error.
		if n := strings.Count(log, "level=ERROR msg=\"embedded store: background error"); n != 0 {
			t.Errorf("round %d: %d background errors logged at error for a file already reported corrupt", round, n)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package faultfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/internal/faultfs"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// records counts the log records written so far.
func (l *lockedBuffer) records() int {
	return strings.Count(l.String(), "level=")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var blobSpec = store.TableSpec{
	Name:         "blobs",
	PartitionKey: []store.Column{{Name: "id", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "seq", Type: store.TypeInt64}},
	Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
}

// TestFullDiskWithoutFloorRecovers fills the disk under the embedded store
// with no free-space floor (--min-free-bytes 0), as another process
// filling it does: the disk itself refuses Pebble's writes, the log's or
// the sstables'. While it is full the store must log a few lines, not a
// flood; once space returns, writes and drops must be accepted again
// without a restart, and every acknowledged write must still be there.
// Three rounds, the later ones starting from a recovered store. The
// memtable is larger than all the rounds write, so that the disk fills
// under a log write rather than at a rotation of the log: Pebble panics
// when it closes a log that fails (a Go fatal error that ends the
// process, as docs/operations.md says), which no store code can catch.
func TestFullDiskWithoutFloorRecovers(t *testing.T) {
	ctx := context.Background()
	disk := faultfs.NewQuota(vfs.NewMem(), "db", 24<<20)
	var logs lockedBuffer
	st, err := ebbpebble.Open("db", ebbpebble.Options{FS: disk, MemTableSize: 16 << 20, MinFreeBytes: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateTable(ctx, blobSpec); err != nil {
		t.Fatal(err)
	}
	payload := incompressible
	put := func(table string, i int) error {
		return st.Write(ctx, table, []store.Mutation{{Kind: store.Upsert, Partition: []any{"a"}, Clustering: []any{int64(i)}, Cells: []store.Cell{{Column: "payload", Value: payload(i)}}}})
	}
	acked := map[int]bool{}
	next := 0
	for round := range 3 {
		victim := fmt.Sprintf("victim%d", round)
		spec := blobSpec
		spec.Name = victim
		if err := st.CreateTable(ctx, spec); err != nil {
			t.Fatalf("round %d: create %s: %v", round, victim, err)
		}
		if err := put(victim, 0); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// Another process takes what is left of the disk.
		disk.SetQuota(disk.Used() + 2<<20)
		var refused error
		for ; refused == nil && next < 100000; next++ {
			if refused = put("blobs", next); refused == nil {
				acked[next] = true
			}
		}
		if !errors.Is(refused, store.ErrStorageFault) && !errors.Is(refused, store.ErrInsufficientStorage) {
			t.Fatalf("round %d: a full disk answered %v", round, refused)
		}
		t.Logf("round %d: full after %d writes: %v", round, len(acked), refused)
		before, cpu := logs.records(), cpuTime(t)
		time.Sleep(time.Second)
		if n := logs.records() - before; n > 5 {
			t.Errorf("round %d: %d log records in one second while the disk stays full, want a few", round, n)
		}
		// Pebble retrying its flush in a loop took 40-48% of a core.
		if used := cpuTime(t) - cpu; used > 200*time.Millisecond {
			t.Errorf("round %d: %v of CPU in one second while the disk stays full, want the retries to back off", round, used)
		} else {
			t.Logf("round %d: %v of CPU in one second while full", round, used)
		}
		// Space returns.
		disk.SetQuota(disk.Used() + 256<<20)
		deadline := time.Now().Add(10 * time.Second)
		for {
			werr := put("blobs", next)
			derr := st.DropTable(ctx, victim)
			if werr == nil && derr == nil {
				acked[next] = true
				next++
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: 10 s after space returned, without a restart: write %v, drop %v", round, werr, derr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := st.Health(); err != nil {
			t.Fatalf("round %d: health after recovery: %v", round, err)
		}
		if infos, err := st.Tables(ctx, victim); err != nil || len(infos) != 0 {
			t.Fatalf("round %d: %s after its drop: %v, %v", round, victim, infos, err)
		}
	}
	for i := range acked {
		row, err := st.Get(ctx, "blobs", []any{"a"}, []any{int64(i)})
		if err != nil || len(row.Values) == 0 || row.Values[0] == nil {
			t.Fatalf("acknowledged row %d lost: %v", i, err)
		}
	}
	t.Logf("%d acknowledged rows all readable", len(acked))
}

// TestFullDiskFlushRetriesBackOff: a disk that refuses sstables for want
// of space (the log still takes writes) makes every memtable flush fail.
// Pebble retries a failed flush at once, in a loop of its own; the store
// must pace those retries and rate-limit their log while the disk stays
// full, and take writes again, without a restart, once a flush succeeds.
func TestFullDiskFlushRetriesBackOff(t *testing.T) {
	ctx := context.Background()
	full := &faultfs.Fault{Class: faultfs.SSTable, Op: faultfs.Write, Errno: syscall.ENOSPC}
	var logs lockedBuffer
	st, err := ebbpebble.Open("db", ebbpebble.Options{FS: faultfs.Wrap(vfs.NewMem(), full), MemTableSize: 1 << 20, MinFreeBytes: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateTable(ctx, blobSpec); err != nil {
		t.Fatal(err)
	}
	put := func(i int) error {
		p := bytes.Repeat([]byte{byte(i)}, 64<<10)
		p[0], p[1] = byte(i>>8), byte(i)
		return st.Write(ctx, "blobs", []store.Mutation{{Kind: store.Upsert, Partition: []any{"a"}, Clustering: []any{int64(i)}, Cells: []store.Cell{{Column: "payload", Value: p}}}})
	}
	full.On()
	var refused error
	i := 0
	for ; refused == nil && i < 2000; i++ {
		refused = put(i)
	}
	if !errors.Is(refused, store.ErrStorageFault) {
		t.Fatalf("after %d writes with sstables refused: %v, want a storage fault", i, refused)
	}
	time.Sleep(100 * time.Millisecond)
	before, cpu := logs.records(), cpuTime(t)
	time.Sleep(time.Second)
	n, used := logs.records()-before, cpuTime(t)-cpu
	t.Logf("while full: %d log records and %v of CPU in one second, %d failed sstable writes in all", n, used, full.Hits())
	if n > 5 {
		t.Errorf("%d log records in one second while every flush fails, want a few", n)
	}
	if used > 200*time.Millisecond {
		t.Errorf("%v of CPU in one second while every flush fails, want the retries paced", used)
	}
	full.Off()
	deadline := time.Now().Add(10 * time.Second)
	for put(i) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused 10 s after the disk took sstables again: %v", put(i))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

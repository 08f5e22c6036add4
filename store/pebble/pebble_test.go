package pebble

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

var eventsSpec = store.TableSpec{
	Name:         "events",
	PartitionKey: []store.Column{{Name: "id", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "seq", Type: store.TypeInt64}},
	Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
}

func openMem(t testing.TB, fs vfs.FS) *Store {
	t.Helper()
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCrashKeepsAcknowledgedWrites abandons the database without Close and
// reopens a crash clone holding only what was synced: every acknowledged
// write must be there.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 4, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]int{}
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("w%d", w)
			for i := range perWriter {
				err := s.Write(ctx, "events", []store.Mutation{{Partition: []any{id}, Clustering: []any{int64(i)},
					Cells: []store.Cell{{Column: "payload", Value: []byte("x")}}}})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[id]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // exactly what was synced
	s2 := openMem(t, crashed)
	defer s2.Close()
	for id, n := range acked {
		page, err := kit.Query(ctx, s2, "events", store.Query{Partition: []any{id}, Limit: store.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) != n {
			t.Errorf("partition %s: %d rows after crash, %d acknowledged", id, len(page.Rows), n)
		}
	}
	// The abandoned store is closed only now, after the clone was taken.
	s.Close()
}

// TestDropTableFreesDisk writes >= 50 MB into a table, drops it, and checks
// that the disk usage falls by at least 80% of that within 5 s.
func TestDropTableFreesDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MB")
	}
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 4096)
	const rows = 16384 // 64 MiB of incompressible payload
	for i := 0; i < rows; i += 256 {
		batch := make([]store.Mutation, 256)
		for j := range batch {
			p := make([]byte, len(payload))
			rand.Read(p)
			batch[j] = store.Mutation{Partition: []any{fmt.Sprintf("p%d", (i+j)%64)}, Clustering: []any{int64(i + j)},
				Cells: []store.Cell{{Column: "payload", Value: p}}}
		}
		if err := s.Write(ctx, "events", batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := s.db.Metrics().DiskSpaceUsage()
	written := uint64(rows * len(payload))
	start := time.Now()
	if err := s.DropTable(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	for {
		after := s.db.Metrics().DiskSpaceUsage()
		if before-min(after, before) >= written*8/10 {
			t.Logf("disk %d -> %d bytes (%d written) in %v", before, after, written, time.Since(start))
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("disk %d -> %d bytes 5 s after dropping %d bytes", before, after, written)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{"p1"}, Limit: 1}); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("query after drop: %v", err)
	}
}

// TestSecondOpenLocked checks that a second Open of the same directory fails
// at once with store.ErrLocked.
func TestSecondOpenLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
}

// TestCatalogSurvivesReopen checks table IDs are never reused and the
// catalog (specs, capacity) survives a restart.
func TestCatalogSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	s := openMem(t, fs)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateTable(ctx, eventsSpec))
	first := s.tables["events"].ID
	must(s.DropTable(ctx, "events"))
	must(s.CreateTable(ctx, eventsSpec))
	must(s.SetCapacity(ctx, "events", store.Capacity{Mode: store.Provisioned, ReadUnits: 5, WriteUnits: 7}))
	second := s.tables["events"].ID
	if second == first {
		t.Fatalf("table ID %d reused", first)
	}
	must(s.Close())
	s = openMem(t, fs)
	defer s.Close()
	infos, err := s.Tables(ctx, "")
	must(err)
	if len(infos) != 1 || !infos[0].Spec.Equal(eventsSpec) || infos[0].Capacity.WriteUnits != 7 {
		t.Fatalf("after reopen: %+v", infos)
	}
	if s.tables["events"].ID != second || s.nextID <= second {
		t.Fatalf("ids after reopen: table %d next %d", s.tables["events"].ID, s.nextID)
	}
}

// TestDeferredWriteDurableWithNextWrite checks the store.DeferredWriter
// promise: a deferred batch is durable once a later Write has returned.
func TestDeferredWriteDurableWithNextWrite(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	defer s.Close()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	row := func(id string) []store.Mutation {
		return []store.Mutation{{Partition: []any{id}, Clustering: []any{int64(1)}, Cells: []store.Cell{{Column: "payload", Value: []byte(id)}}}}
	}
	if err := s.WriteDeferred(ctx, "events", row("deferred")); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, "events", row("synced")); err != nil {
		t.Fatal(err)
	}
	s2 := openMem(t, fs.CrashClone(vfs.CrashCloneCfg{}))
	defer s2.Close()
	for _, id := range []string{"deferred", "synced"} {
		if _, err := s2.Get(ctx, "events", []any{id}, []any{int64(1)}); err != nil {
			t.Errorf("%s row after crash: %v", id, err)
		}
	}
}

// TestOptionsValidate: Open refuses bad sizes before touching the
// directory; DefaultOptions opens.
func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{CacheSize: -1}, {MemTableSize: -1}, {MemTableSize: 8 << 30}} {
		o.FS = vfs.NewMem()
		if _, err := Open("db", o); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Open with %+v: %v, want ErrInvalid", o, err)
		}
	}
	o := DefaultOptions()
	o.FS = vfs.NewMem()
	st, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

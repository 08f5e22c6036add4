package pebble

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/internal/faultfs"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// TestWALFaultLosesNothingAcknowledged fails the write-ahead log's writes,
// or its syncs, under concurrent writers, then crashes the machine (a
// crash clone keeps only what was synced): every acknowledged write must
// be there, writes after the fault are refused with ErrStorageFault, and
// reads go on. A writer still acknowledged long after the fault (as with
// unsynced writes, whose log errors nobody waits for) fails the test
// rather than writing until Pebble rotates the broken log and panics.
func TestWALFaultLosesNothingAcknowledged(t *testing.T) {
	// pastFault bounds the writes one writer may have acknowledged after
	// the fault is switched on: the writes already in the pipeline then.
	const pastFault = 20
	for _, op := range []faultfs.Op{faultfs.Write, faultfs.Sync} {
		t.Run(string(op), func(t *testing.T) {
			ctx := context.Background()
			mem := vfs.NewCrashableMem()
			fault := faultfs.NewFault(faultfs.WAL, op)
			s, err := Open("db", Options{FS: faultfs.Wrap(mem, fault)})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreateTable(ctx, eventsSpec); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			acked := map[string]int{}
			var refusals []error
			var faulted atomic.Bool
			unrefused := 0
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					id := fmt.Sprintf("w%d", w)
					after := 0
					for i := 0; ; i++ {
						if i == 50 && w == 0 {
							fault.On()
							faulted.Store(true)
						}
						if faulted.Load() {
							if after++; after > pastFault {
								mu.Lock()
								unrefused++
								mu.Unlock()
								return
							}
						}
						err := s.Write(ctx, "events", []store.Mutation{{Partition: []any{id}, Clustering: []any{int64(i)},
							Cells: []store.Cell{{Column: "payload", Value: []byte("x")}}}})
						mu.Lock()
						if err != nil {
							refusals = append(refusals, err)
							mu.Unlock()
							return
						}
						acked[id]++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if unrefused > 0 {
				t.Errorf("%d of 4 writers had %d writes acknowledged after the write-ahead log failed; want them refused with ErrStorageFault", unrefused, pastFault)
			}
			for _, err := range refusals {
				if !errors.Is(err, store.ErrStorageFault) {
					t.Errorf("write during the fault: %v, want ErrStorageFault", err)
				}
			}
			fault.Off()
			if err := s.Health(); !errors.Is(err, store.ErrStorageFault) {
				t.Errorf("Health after the fault: %v", err)
			}
			if err := s.Write(ctx, "events", []store.Mutation{{Partition: []any{"late"}, Clustering: []any{int64(0)}}}); !errors.Is(err, store.ErrStorageFault) {
				t.Errorf("write after the fault, before a restart: %v, want ErrStorageFault", err)
			}
			if _, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{"w0"}, Limit: 10}); err != nil {
				t.Errorf("read after the fault: %v", err)
			}
			s2, err := Open("db", Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			total := 0
			for id, n := range acked {
				page, err := kit.Query(ctx, s2, "events", store.Query{Partition: []any{id}, Limit: store.MaxLimit})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Rows) < n {
					t.Errorf("partition %s: %d rows after the crash, %d acknowledged", id, len(page.Rows), n)
				}
				total += n
			}
			t.Logf("%d writes acknowledged, %d refused, none lost", total, len(refusals))
			_ = s.Close()
		})
	}
}

// TestEmptyFlushIsNoFault: a flush that installs no sstable (every key in
// its memtables elided, as after an excise) ends with Pebble's "empty
// table" error in FlushInfo.Err. That is a successful flush: it neither
// refuses writes nor keeps an earlier flush fault; a real flush error
// does refuse them.
func TestEmptyFlushIsNoFault(t *testing.T) {
	ctx := context.Background()
	s, err := Open("db", Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	write := func() error {
		return s.Write(ctx, "events", []store.Mutation{{Partition: []any{"p"}, Clustering: []any{int64(1)},
			Cells: []store.Cell{{Column: "payload", Value: []byte("x")}}}})
	}
	l := s.eventListener()
	empty := pebble.FlushInfo{Err: errors.New("pebble: empty table")}
	l.FlushEnd(empty)
	if err := write(); err != nil {
		t.Fatalf("write after an empty flush: %v", err)
	}
	// A flush cancelled by a concurrent excise (a drop) is retried by
	// Pebble: no fault (this once refused writes in a CLI test).
	cancelled := pebble.FlushInfo{Err: fmt.Errorf("flush: %w", pebble.ErrCancelledCompaction)}
	l.FlushEnd(cancelled)
	if err := write(); err != nil {
		t.Fatalf("write after a cancelled flush: %v", err)
	}
	l.FlushEnd(pebble.FlushInfo{Err: errors.New("open 000042.sst: input/output error")})
	if err := write(); !errors.Is(err, store.ErrStorageFault) {
		t.Fatalf("write after a failed flush: %v, want ErrStorageFault", err)
	}
	// Nor does a cancelled flush clear a real fault: only a success does.
	l.FlushEnd(cancelled)
	if err := write(); !errors.Is(err, store.ErrStorageFault) {
		t.Fatalf("write after a failed flush: %v, want ErrStorageFault", err)
	}
	l.FlushEnd(empty)
	if err := write(); err != nil {
		t.Fatalf("write after an empty flush that followed a failed one: %v", err)
	}
}

package pebble

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/store"
)

// usageFS reports avail free bytes and counts the times it is asked.
type usageFS struct {
	vfs.FS
	avail atomic.Uint64
	asked atomic.Int64
}

func (f *usageFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	f.asked.Add(1)
	return vfs.DiskUsage{AvailBytes: f.avail.Load(), TotalBytes: 1 << 40}, nil
}

// TestAdmitReusesFreeSpaceFarFromTheFloor: far above the floor, writes in
// quick succession read the free space once; within twice the floor every
// write reads it afresh, so the floor refuses the first write past it.
func TestAdmitReusesFreeSpaceFarFromTheFloor(t *testing.T) {
	const floor = 1 << 20
	fs := &usageFS{FS: vfs.NewMem()}
	fs.avail.Store(1 << 30)
	s, err := Open("db", Options{FS: fs, MinFreeBytes: floor})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Far above the floor: the reading is reused within freeReuse. The
	// loop retries while the machine is too slow to make 100 admits
	// within one freeReuse.
	for attempt := 0; ; attempt++ {
		time.Sleep(2 * freeReuse)
		before, start := fs.asked.Load(), time.Now()
		for range 100 {
			if err := s.admit("t", true); err != nil {
				t.Fatal(err)
			}
		}
		if time.Since(start) < freeReuse {
			if n := fs.asked.Load() - before; n != 1 {
				t.Fatalf("100 admits far above the floor asked the file system %d times, want 1", n)
			}
			break
		}
		if attempt == 20 {
			t.Fatal("100 admits never ran within one freeReuse")
		}
	}
	// Near the floor: every admit asks, and the first one past it is
	// refused although a reading far above it is a moment old.
	fs.avail.Store(2*floor - 1)
	time.Sleep(2 * freeReuse)
	if err := s.admit("t", true); err != nil {
		t.Fatal(err)
	}
	before := fs.asked.Load()
	for range 10 {
		if err := s.admit("t", true); err != nil {
			t.Fatal(err)
		}
	}
	if n := fs.asked.Load() - before; n != 10 {
		t.Fatalf("10 admits within twice the floor asked %d times, want 10", n)
	}
	fs.avail.Store(floor - 1)
	if err := s.admit("t", true); !errors.Is(err, store.ErrInsufficientStorage) {
		t.Fatalf("admit past the floor: %v, want ErrInsufficientStorage", err)
	}
}

// Package faultfs injects disk faults into the embedded store's file
// system, for tests: errors on one class of Pebble's files (the
// write-ahead log, sstables, the MANIFEST) and one kind of operation
// (write, sync, read), switched on and off while the store runs; and a
// file system with a space quota that reports its free space and refuses
// writes past it, as a full disk does.
//
// Both plug into Pebble's vfs/errorfs, the file system Pebble's own
// metamorphic tests inject errors with.
package faultfs

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// Wrap is errorfs.Wrap, except that inj also reaches the write-ahead log
// files Pebble recycles: errorfs.FS hands out the file of ReuseForWrite
// unwrapped, so without this a sync fault would miss every log after the
// first few.
func Wrap(fs vfs.FS, inj errorfs.Injector) vfs.FS {
	return &recycling{FS: errorfs.Wrap(fs, inj), inj: inj}
}

type recycling struct {
	*errorfs.FS
	inj errorfs.Injector
}

// ReuseForWrite implements vfs.FS.
func (r *recycling) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := r.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return errorfs.WrapFile(f, errorfs.InjectorFunc(func(op errorfs.Op) error {
		op.Path = newname
		return r.inj.MaybeError(op)
	})), nil
}

// Class is a kind of file of the embedded store.
type Class string

// The classes of files faults are injected into.
const (
	WAL      Class = "wal"      // NNNNNN.log
	SSTable  Class = "sstable"  // NNNNNN.sst
	Manifest Class = "manifest" // MANIFEST-NNNNNN and its marker
)

// Op is a kind of file operation.
type Op string

// The kinds of operations faults are injected into.
const (
	Write Op = "write" // creating, writing, preallocating
	Sync  Op = "sync"  // fsync, fdatasync, sync_file_range
	Read  Op = "read"  // reading and opening for reading
)

// Matches reports whether a file name (a path) is of class c.
func (c Class) Matches(name string) bool {
	base := path.Base(name)
	switch c {
	case WAL:
		return strings.HasSuffix(base, ".log")
	case SSTable:
		return strings.HasSuffix(base, ".sst")
	case Manifest:
		return strings.HasPrefix(base, "MANIFEST-") || strings.HasPrefix(base, "marker.manifest.")
	}
	return false
}

// Matches reports whether an errorfs operation is of kind o.
func (o Op) Matches(k errorfs.OpKind) bool {
	switch o {
	case Write:
		return k == errorfs.OpCreate || k == errorfs.OpReuseForWrite || k == errorfs.OpFileWrite ||
			k == errorfs.OpFileWriteAt || k == errorfs.OpFilePreallocate
	case Sync:
		return k == errorfs.OpFileSync || k == errorfs.OpFileSyncData || k == errorfs.OpFileSyncTo
	case Read:
		return k == errorfs.OpOpen || k == errorfs.OpFileRead || k == errorfs.OpFileReadAt
	}
	return false
}

// Fault is an errorfs.Injector failing the operations of one kind on the
// files of one class with EIO, while switched on. It starts off. It is safe
// for concurrent use.
type Fault struct {
	Class Class
	Op    Op
	// Errno is the error the operations fail with; zero means EIO.
	// ENOSPC makes a disk that refuses one class of files for want of
	// space, as a full disk refuses sstables while a recycled log still
	// takes writes.
	Errno syscall.Errno
	on    atomic.Bool
	hits  atomic.Int64
}

var _ errorfs.Injector = (*Fault)(nil)

// NewFault returns a Fault on op of class files, switched off.
func NewFault(class Class, op Op) *Fault { return &Fault{Class: class, Op: op} }

// On switches the fault on.
func (f *Fault) On() { f.on.Store(true) }

// Off switches the fault off: the disk works again.
func (f *Fault) Off() { f.on.Store(false) }

// Hits returns how many operations the fault has failed.
func (f *Fault) Hits() int64 { return f.hits.Load() }

// MaybeError implements errorfs.Injector.
func (f *Fault) MaybeError(op errorfs.Op) error {
	if !f.on.Load() || !f.Op.Matches(op.Kind) || !f.Class.Matches(op.Path) {
		return nil
	}
	f.hits.Add(1)
	errno := f.Errno
	if errno == 0 {
		errno = syscall.EIO
	}
	return fmt.Errorf("faultfs: injected %s fault on %s: %w", f.Op, path.Base(op.Path), errno)
}

// String implements errorfs.Injector.
func (f *Fault) String() string { return fmt.Sprintf("%s %s fault", f.Class, f.Op) }

// Quota is a vfs.FS of at most Quota bytes under its root: GetDiskUsage
// reports Quota less what the files under the root hold, and a write (or
// a file creation) fails with ENOSPC once they hold Quota bytes or more. A
// write that crosses the quota still succeeds, as a file system's last
// free blocks do. Create it with NewQuota.
type Quota struct {
	vfs.FS
	root  string
	quota atomic.Int64
	// Refused counts the operations refused for want of space.
	Refused atomic.Int64
}

// NewQuota returns a Quota of quota bytes over fs, counting the files
// under root.
func NewQuota(fs vfs.FS, root string, quota int64) *Quota {
	q := &Quota{root: root}
	q.FS = Wrap(fs, errorfs.InjectorFunc(q.maybeFull))
	q.quota.Store(quota)
	return q
}

// SetQuota changes the quota, as growing or shrinking the disk would.
func (q *Quota) SetQuota(n int64) { q.quota.Store(n) }

// Used returns the bytes the files under the root hold.
func (q *Quota) Used() int64 { return q.used(q.root) }

func (q *Quota) used(dir string) int64 {
	names, err := q.FS.List(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, name := range names {
		p := q.FS.PathJoin(dir, name)
		info, err := q.FS.Stat(p)
		if err != nil {
			continue // removed meanwhile
		}
		if info.IsDir() {
			n += q.used(p)
		} else {
			n += info.Size()
		}
	}
	return n
}

// GetDiskUsage implements vfs.FS, reporting the quota's free space.
func (q *Quota) GetDiskUsage(string) (vfs.DiskUsage, error) {
	total, used := q.quota.Load(), q.Used()
	avail := max(total-used, 0)
	return vfs.DiskUsage{AvailBytes: uint64(avail), TotalBytes: uint64(total), UsedBytes: uint64(min(used, total))}, nil
}

func (q *Quota) maybeFull(op errorfs.Op) error {
	if !Write.Matches(op.Kind) {
		return nil
	}
	if q.Used() < q.quota.Load() {
		return nil
	}
	q.Refused.Add(1)
	// As os.File reports it: the operation and the path, so that the store
	// can tell a write refused for want of space from a failed sync.
	pathOp := "write"
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpReuseForWrite:
		pathOp = "open"
	case errorfs.OpFilePreallocate:
		pathOp = "fallocate"
	}
	return &fs.PathError{Op: pathOp, Path: op.Path, Err: fmt.Errorf("faultfs: quota of %d bytes reached: %w", q.quota.Load(), syscall.ENOSPC)}
}

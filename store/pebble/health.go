package pebble

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/store"
)

// DefaultMinFreeBytes is the free-space floor Open uses when
// Options.MinFreeBytes is zero: room for Pebble to flush two full
// memtables and to compact, with a margin.
const DefaultMinFreeBytes = 256 << 20

var _ store.HealthReporter = (*Store)(nil)

// guard decides which writes the store still accepts: none after a fault
// of the write-ahead log (sticky until a restart), none while flushes to
// sstables fail (until one succeeds), and no upserts while the disk has
// less free space than the floor. Its fields are atomics: writes consult
// it without a lock.
type guard struct {
	fs      vfs.FS
	dir     string
	minFree int64 // <= 0: no floor

	fault      atomic.Pointer[error] // first write fault; cleared only by a recovery from a full disk (recover.go)
	panicked   atomic.Bool           // a commit panicked inside Pebble: no recovery without a restart
	flushFault atomic.Pointer[error] // last flush failure; cleared by a flush that succeeds

	free           atomic.Int64 // free bytes last seen; -1 when unknown
	freeAt         atomic.Int64 // when admit last read free, in ns on monoClock; 0: never
	refusedFull    atomic.Uint64
	refusedFault   atomic.Uint64
	usageUnknown   atomic.Bool // GetDiskUsage failed once, logged
	insufficientAt atomic.Bool // below the floor at the last check, for logging transitions
}

// Health reports whether the store is healthy; see store.HealthReporter.
// It is not after a write fault (writes are refused) nor after Pebble found
// a corrupt block (reads touching it fail; writes go on).
func (s *Store) Health() error {
	if err := s.writeHealth(); err != nil {
		return err
	}
	return s.corruptionHealth()
}

// writeHealth reports whether the store accepts writes: nil unless a disk
// fault made it refuse them.
func (s *Store) writeHealth() error {
	if p := s.guard.fault.Load(); p != nil {
		if s.recovering() {
			return store.Wrapf(store.ErrStorageFault, *p, "the disk is full: a write to the log failed for want of space: writes, deletes and drops are refused until space returns, then accepted again without a restart")
		}
		return store.Wrapf(store.ErrStorageFault, *p, "the disk failed a write or a sync: writes are refused until the server restarts and recovers what was made durable")
	}
	if p := s.guard.flushFault.Load(); p != nil {
		return store.Wrapf(store.ErrStorageFault, *p, "the disk refuses to take memtables flushed to sstables: writes are refused until a flush succeeds")
	}
	return nil
}

// admit refuses a write the store must not take now: any write after a
// fault, and a write that adds data (upserts is true) to a table other
// than ebb's metadata while the disk is below the free-space floor.
// Deletes and drops pass the floor, since they are how expiry frees the
// disk; so do the metadata table's small writes (leases, the sweeper's
// watermark), which keep the background roles running.
func (s *Store) admit(table string, upserts bool) error {
	if err := s.writeHealth(); err != nil {
		s.guard.refusedFault.Add(1)
		return err
	}
	if !upserts || table == store.MetaTable || s.guard.minFree <= 0 {
		return nil
	}
	free := s.admitFree()
	if free < 0 || free >= s.guard.minFree {
		if s.guard.insufficientAt.CompareAndSwap(true, false) {
			s.log.Info("free disk space back above the floor: writes accepted again", "component", "pebble", "free_bytes", free, "min_free_bytes", s.guard.minFree)
		}
		return nil
	}
	s.guard.refusedFull.Add(1)
	if s.guard.insufficientAt.CompareAndSwap(false, true) {
		s.log.Error("free disk space below the floor: refusing writes that add data until expiry, deletes or drops free space", "component", "pebble", "free_bytes", free, "min_free_bytes", s.guard.minFree)
	}
	return store.Errorf(store.ErrInsufficientStorage, "%d bytes free on the data directory's disk, below the floor of %d bytes (--min-free-bytes); deletes and drops are still accepted", free, s.guard.minFree)
}

// freeReuse is how long admit trusts a reading of the free space that is
// at least twice the floor, instead of asking the file system on every
// write (a statfs was 6% of a shared-table put's CPU). Filling the
// distance to the floor, 256 MiB by default, within it would take writes
// at tens of GB/s; near the floor every write reads afresh.
const freeReuse = 10 * time.Millisecond

// monoBase anchors monoClock: the monotonic reading of the system clock,
// since the free-space reuse is measured time, not the store's Now, which
// tests move at will.
var monoBase = time.Now()

func monoClock() int64 { return int64(time.Since(monoBase)) }

// admitFree is the free space admit checks against the floor: the last
// reading while it is recent and at least twice the floor, else a new one.
func (s *Store) admitFree() int64 {
	now := monoClock()
	if at := s.guard.freeAt.Load(); at != 0 && now-at < int64(freeReuse) {
		if free := s.guard.free.Load(); free >= 2*s.guard.minFree {
			return free
		}
	}
	free := s.diskFree()
	s.guard.freeAt.Store(max(now, 1))
	return free
}

// diskFree returns the bytes available on the data directory's file
// system, or -1 when the file system cannot tell (then no floor applies).
func (s *Store) diskFree() int64 {
	u, err := s.guard.fs.GetDiskUsage(s.guard.dir)
	if err != nil {
		if s.guard.usageUnknown.CompareAndSwap(false, true) {
			s.log.Warn("cannot read the free disk space; the free-space floor is not enforced", "component", "pebble", "err", err)
		}
		s.guard.free.Store(-1)
		return -1
	}
	free := int64(min(u.AvailBytes, uint64(1<<63-1)))
	s.guard.free.Store(free)
	return free
}

// fail records a fault of a write the store cannot retry: a commit to the
// write-ahead log, or a drop. Pebble keeps a log writer's error for good,
// and after a failed fsync the page cache can no longer be trusted to hold
// what was written (PostgreSQL's "fsyncgate"), so the store refuses every
// later write until a restart replays what the log durably holds.
func (s *Store) fail(err error) {
	if s.guard.fault.CompareAndSwap(nil, &err) {
		if recoverable(err) {
			s.log.Error("embedded store: the disk is full: a write to the log failed for want of space; refusing every write until space returns, then reopening the database (reads go on)", "component", "pebble", "err", err)
			s.wakeRecovery()
			return
		}
		s.log.Error("embedded store: disk fault; refusing every write until the server restarts (reads go on)", "component", "pebble", "err", err)
	}
}

// eventListener turns Pebble's flush outcomes into the flush fault, logs
// its background errors and slow disks, and counts its write stalls.
func (s *Store) eventListener() *pebble.EventListener {
	return &pebble.EventListener{
		FlushEnd: func(info pebble.FlushInfo) {
			// A flush cancelled by a concurrent operation (an excise, as
			// a table drop makes) is retried by Pebble, which calls this
			// "expected during normal operation": it says nothing about
			// the disk either way.
			if errors.Is(info.Err, pebble.ErrCancelledCompaction) {
				s.log.Debug("embedded store: a flush was cancelled by a concurrent operation; Pebble retries it", "component", "pebble", "err", info.Err)
				return
			}
			// A flush that succeeded with nothing left to write (every key
			// elided) ends with Pebble's "empty table" error: a success.
			if info.Err != nil && !isEmptyTable(info.Err) {
				err := info.Err
				if s.guard.flushFault.Swap(&err) == nil {
					s.log.Error("embedded store: flushing a memtable to an sstable failed; refusing writes until a flush succeeds", "component", "pebble", "err", err)
				}
				return
			}
			s.bg.succeeded()
			if s.guard.flushFault.Swap(nil) != nil {
				s.log.Info("embedded store: a flush succeeded: writes accepted again", "component", "pebble")
			}
		},
		BackgroundError: s.onBackgroundError,
		// Without it Pebble's default calls Fatalf, and a corrupt block
		// would end the process on every start (corruption.go).
		DataCorruption: s.onCorruption,
		DiskSlow: func(info pebble.DiskSlowInfo) {
			s.log.Warn("embedded store: slow disk", "component", "pebble", "info", info.String())
		},
		WriteStallBegin: s.stalls.begin,
		WriteStallEnd:   s.stalls.end,
	}
}

// isEmptyTable reports whether a flush "failed" only because it produced
// no sstable. Pebble sets FlushInfo.Err to an error it does not export
// when a successful flush installs no table; its own metamorphic tests
// tell it apart by its text, as this does.
func isEmptyTable(err error) bool {
	return strings.Contains(err.Error(), "pebble: empty table")
}

// readFault turns an error of Pebble on a read into the store's terms: an
// I/O error is unavailable (a retry may succeed; the disk may be failing)
// and logged, since no client error explains it.
func (s *Store) readFault(op, table string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	s.log.Error("embedded store: read failed", "component", "pebble", "op", op, "table", table, "err", err)
	return store.Wrapf(store.ErrUnavailable, err, "%s %s: reading the disk failed", op, table)
}

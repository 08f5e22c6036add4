package pebble

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Recovery from a full disk without a restart.
//
// A write to the write-ahead log that fails leaves Pebble's log writer
// broken for good: it keeps its first error, returns it to every later
// record, and Pebble panics on it (a commit, or the next rotation of the
// log, which closes the broken writer). So the store latches the fault
// (fail, health.go) and refuses every later write, and only a new
// pebble.DB, which replays the log from disk, can take writes again.
//
// Whether a new pebble.DB may be opened in place, without a restart,
// depends on what failed:
//
//   - A sync (fsync, fdatasync, sync_file_range) that failed may have
//     lost dirty pages the kernel then marks clean (PostgreSQL's
//     "fsyncgate"): the page cache a reopen would replay the log from can
//     hold bytes that are not on the disk, and a later sync would report
//     success. Such a fault stays latched: writes are refused until an
//     operator restarts the server, as docs/operations.md says.
//   - A write or a file creation that failed with ENOSPC, before any sync,
//     handed the kernel no bytes it could lose: write(2) took nothing (or
//     a prefix, which stays ordinary dirty data). The log writer stops at
//     its first error, so every sync before it succeeded: every commit
//     acknowledged as synced is on the disk. Reopening replays the log up
//     to the failed record, and Pebble reads a torn tail of the last log
//     as its end. What is lost is what was never acknowledged: the commit
//     that failed (its caller got an error), and batches applied to the
//     memtable whose log write never reached the disk (their callers got
//     an error too, though a read may have seen them meanwhile).
//     Unsynced commits (Options.NoSync, deferred writes) acknowledged
//     before the fault may be lost, as they would be in a crash.
//
// So a fault whose first error is ENOSPC on a write or a create is
// recoverable: once the disk has room again, the recovery loop closes the
// broken database and opens it again in place, under the store's lock,
// and loadCatalog finishes any drop the fault interrupted. Every other
// fault stays latched until a restart.

// recovery runs the loop that reopens the database after a recoverable
// fault. It is owned by the Store: started by Open, stopped by Close.
type recovery struct {
	wake chan struct{} // a recoverable fault was latched
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// Recovery timing: the loop checks the free space every recoveryPoll at
// first, doubling up to recoveryMaxPoll, and reopens once at least
// recoveryRoom is free (or the file system cannot tell).
const (
	recoveryPoll    = 50 * time.Millisecond
	recoveryMaxPoll = 2 * time.Second
)

// recoverable reports whether a latched fault may be recovered from by
// reopening the database: ENOSPC on a write or a file creation, never on
// a sync. Pebble's file system reports the operation in an *fs.PathError
// (os.File's "write", "open"); an ENOSPC without one is taken for a sync,
// since which operation failed cannot be told.
func recoverable(err error) bool {
	if !errors.Is(err, syscall.ENOSPC) {
		return false
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Op {
	case "write", "writeat", "pwrite", "open", "create", "fallocate", "preallocate", "truncate":
		return true
	}
	return false
}

// recoveryRoom is the free space the loop waits for before it reopens: a
// log (up to a memtable's size) and a flushed memtable must fit, or the
// new database would fail again at once. The free-space floor, when set,
// is what it waits for if larger.
func (s *Store) recoveryRoom() int64 {
	return max(s.guard.minFree, 2*int64(s.popts.MemTableSize))
}

func (s *Store) startRecovery() {
	s.rec.wake = make(chan struct{}, 1)
	s.rec.stop = make(chan struct{})
	s.rec.wg.Go(s.recoveryLoop)
}

func (s *Store) stopRecovery() {
	if s.rec.stop == nil {
		return // Open failed before starting it
	}
	s.rec.once.Do(func() { close(s.rec.stop) })
	s.rec.wg.Wait()
}

// wakeRecovery tells the loop a recoverable fault was latched.
func (s *Store) wakeRecovery() {
	if s.rec.wake == nil {
		return
	}
	select {
	case s.rec.wake <- struct{}{}:
	default:
	}
}

func (s *Store) recoveryLoop() {
	for {
		select {
		case <-s.rec.stop:
			return
		case <-s.rec.wake:
		}
		poll := recoveryPoll
		for s.recovering() {
			t := time.NewTimer(poll)
			select {
			case <-s.rec.stop:
				t.Stop()
				return
			case <-t.C:
			}
			poll = min(2*poll, recoveryMaxPoll)
			if free := s.diskFree(); free >= 0 && free < s.recoveryRoom() {
				continue
			}
			if err := s.reopen(); err != nil {
				s.log.Error("embedded store: reopening after a full disk failed; retrying", "component", "pebble", "err", err, "retry_in", poll)
			}
		}
	}
}

// openDB opens the database again with the options Open used and a new
// cache (the old one went with the old database).
func (s *Store) openDB() (*pebble.DB, error) {
	cache := pebble.NewCache(s.cacheBytes)
	defer cache.Unref()
	popts := *s.popts
	popts.Cache = cache
	db, err := pebble.Open(s.dir, &popts)
	if err != nil {
		return nil, fmt.Errorf("pebble: reopen %s: %w", s.dir, err)
	}
	return db, nil
}

// recovering reports whether a latched fault waits for a recovery.
func (s *Store) recovering() bool {
	p := s.guard.fault.Load()
	return p != nil && recoverable(*p) && !s.guard.panicked.Load()
}

// reopen replaces a database whose log writer failed for want of space
// with a new one opened on the same directory, and clears the fault.
func (s *Store) reopen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A commit that panicked inside Pebble's commit pipeline may have
	// left it locked, and closing the database would then wait for ever:
	// recovering does not hold after a panic.
	if s.closed || !s.recovering() {
		return nil
	}
	p := s.guard.fault.Load()
	// The old database's Close reports its log writer's error: it is done
	// with either way.
	if cerr := s.db.Close(); cerr != nil {
		s.log.Info("embedded store: closed the database that failed for want of space", "component", "pebble", "err", cerr)
	}
	var db *pebble.DB
	var err error
	for attempt, wait := 1, recoveryPoll; ; attempt, wait = attempt+1, min(2*wait, recoveryMaxPoll) {
		if db, err = s.openDB(); err == nil {
			break
		}
		if attempt == 8 {
			// Every operation now answers ErrClosed rather than reach a
			// closed database; a restart opens it again.
			s.closed = true
			s.log.Error("embedded store: the database could not be opened again after a full disk; restart the server", "component", "pebble", "err", err)
			return err
		}
		time.Sleep(wait)
	}
	s.db = db
	s.tables, s.nextID = map[string]*table{}, 0
	if err := s.loadCatalog(); err != nil {
		return fmt.Errorf("pebble: reopen %s: %w", s.dir, err)
	}
	s.guard.flushFault.Store(nil)
	s.guard.fault.Store(nil)
	s.log.Info("embedded store: the disk has room again; reopened the database and accepting writes again, without a restart", "component", "pebble", "fault", *p)
	return nil
}

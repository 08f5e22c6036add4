package pebble

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/store"
)

var _ store.Checkpointer = (*Store)(nil)

// ErrCheckpointTarget: a checkpoint's directory cannot be what it names
// (inside the live data directory, under a file, on a file system that
// takes no directories, holding a NUL byte); it wraps store.ErrInvalid.
var ErrCheckpointTarget = store.Mark(store.ErrInvalid, "pebble", "checkpoint directory refused")

// Checkpoint writes a consistent copy of the whole store, every table and
// ebb's own metadata, into dir, which must not exist; see
// store.Checkpointer. The write-ahead log is flushed first, so every write
// acknowledged before the call is in the copy. Sstables are hard-linked
// where dir is on the same file system, so a checkpoint is cheap to take;
// copy it elsewhere to make it a backup. The last file written is the
// checkpoint's manifest (ManifestName): every file with its size, and a
// SHA-256 of every file but the sstables, which carry block checksums of
// their own; VerifyCheckpoint checks a checkpoint against it.
//
// A dir that cannot be a checkpoint's is refused with ErrCheckpointTarget,
// and a disk with no room with store.ErrInsufficientStorage; a checkpoint
// that fails half-way is removed.
func (s *Store) Checkpoint(ctx context.Context, dir string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	dir, err := s.checkpointTarget(dir)
	if err != nil {
		return 0, err
	}
	// Shared: no table is dropped or created half-way through the copy.
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	// Flushing the write-ahead log is a write to the data directory: on a
	// disk below the free-space floor it could fail, and Pebble ends the
	// process on a failed commit. The free space is read afresh: a backup
	// is rare, and the disk may be the backup's own.
	if err := s.writeHealth(); err != nil {
		return 0, fmt.Errorf("pebble: checkpoint to %s: %w", dir, err)
	}
	if free := s.diskFree(); s.guard.minFree > 0 && free >= 0 && free < s.guard.minFree {
		return 0, store.Errorf(store.ErrInsufficientStorage, "checkpoint to %s: %d bytes free on the data directory's disk, below the floor of %d bytes (--min-free-bytes)", dir, free, s.guard.minFree)
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return 0, s.checkpointFailed(dir, err)
	}
	size, err := writeManifest(s.guard.fs, dir)
	if err != nil {
		return 0, s.checkpointFailed(dir, err)
	}
	return size, nil
}

// checkpointTarget checks that dir can be a new checkpoint's directory
// and returns it cleaned. It creates dir's parent where missing, as
// Pebble's own checkpoint does, and nothing else.
func (s *Store) checkpointTarget(dir string) (string, error) {
	if strings.ContainsRune(dir, 0) {
		return "", store.Errorf(ErrCheckpointTarget, "%q holds a NUL byte", dir)
	}
	dir = filepath.Clean(dir)
	fs := s.guard.fs
	if inside(resolve(fs, dir), resolve(fs, s.guard.dir)) {
		return "", store.Errorf(ErrCheckpointTarget, "%s is inside the live data directory %s; back up to a directory outside it", dir, s.guard.dir)
	}
	if _, err := fs.Stat(dir); err == nil {
		return "", store.Errorf(store.ErrConflict, "checkpoint directory %s exists; name a new one", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", targetError(dir, err)
	}
	// Creating dir, then removing it, tells a path the file system cannot
	// hold (under /proc, under a file) from a failure half-way through.
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return "", targetError(dir, err)
	}
	if err := fs.Remove(dir); err != nil {
		return "", fmt.Errorf("pebble: checkpoint to %s: %w", dir, err)
	}
	return dir, nil
}

// targetError says why dir cannot be created: the disk is full
// (store.ErrInsufficientStorage), or the path is not one a directory can
// have (ErrCheckpointTarget); other errors are the disk's own.
func targetError(dir string, err error) error {
	switch {
	case isNoSpace(err):
		return store.Wrapf(store.ErrInsufficientStorage, err, "checkpoint to %s: the disk is full", dir)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EACCES),
		errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EINVAL),
		errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EEXIST):
		return store.Errorf(ErrCheckpointTarget, "cannot create %s: %v", dir, err)
	}
	return fmt.Errorf("pebble: checkpoint to %s: %w", dir, err)
}

// checkpointFailed removes what a failed checkpoint wrote into dir, and
// says why it failed: a full disk is store.ErrInsufficientStorage.
func (s *Store) checkpointFailed(dir string, err error) error {
	if rerr := s.guard.fs.RemoveAll(dir); rerr != nil {
		s.log.Error("embedded store: removing a failed checkpoint", "component", "pebble", "dir", dir, "err", rerr)
	}
	if isNoSpace(err) {
		return store.Wrapf(store.ErrInsufficientStorage, err, "checkpoint to %s: the disk is full", dir)
	}
	return fmt.Errorf("pebble: checkpoint to %s: %w", dir, err)
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// resolve returns path absolute, with the symbolic links of its longest
// existing prefix resolved, so that two spellings of one directory
// compare equal. On a file system other than the operating system's it
// only cleans the path.
func resolve(fs vfs.FS, path string) string {
	path = filepath.Clean(path)
	if fs != vfs.Default {
		return path
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	var rest []string
	for p := path; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if p == filepath.Dir(p) {
			return path
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// inside reports whether path is dir or lies under it; both are cleaned.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ResolvePath is resolve on the operating system's file system, for
// callers outside the store that compare directories (ebb.Restore).
func ResolvePath(path string) string { return resolve(vfs.Default, path) }

// Inside reports whether path is dir or lies under it, once both are
// resolved with ResolvePath.
func Inside(path, dir string) bool { return inside(ResolvePath(path), ResolvePath(dir)) }

package ebb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// ErrBackupUnsupported: the backend has no checkpoints of its own (DynamoDB
// and CQL have their provider's backups; see docs/operations.md).
var ErrBackupUnsupported = fmt.Errorf("%w: backups through ebb are for the embedded backend; use the provider's backups (DynamoDB point-in-time recovery, CQL snapshots)", store.ErrInvalid)

// Backup is one backup taken by DB.Backup.
type Backup struct {
	Dir   string
	Bytes int64
	Took  time.Duration
}

// Backup writes a consistent copy of the embedded store into dir, which
// must not exist: every table, and ebb's metadata (index configs, shard
// history, sweeper watermarks, leases), so that a server restored from it
// neither re-deletes nor misses anything. The DB keeps serving meanwhile.
func (db *DB) Backup(ctx context.Context, dir string) (Backup, error) {
	cp, ok := db.raw.(store.Checkpointer)
	if !ok {
		return Backup{}, ErrBackupUnsupported
	}
	if !filepath.IsAbs(dir) {
		return Backup{}, fmt.Errorf("%w: backup directory %q must be an absolute path", store.ErrInvalid, dir)
	}
	if _, err := os.Stat(dir); err == nil {
		return Backup{}, fmt.Errorf("%w: backup directory %s exists; name a new one", store.ErrConflict, dir)
	}
	start := db.o.Now()
	n, err := cp.Checkpoint(ctx, dir)
	if err != nil {
		return Backup{}, err
	}
	return Backup{Dir: dir, Bytes: n, Took: db.o.Now().Sub(start)}, nil
}

// ErrNotEmpty: Restore refuses to write into a data directory that holds
// anything.
var ErrNotEmpty = errors.New("ebb: data directory is not empty")

// Restore copies a backup taken by DB.Backup into data, an empty or
// missing directory, and checks that the result opens. It refuses a data
// directory that holds anything: restoring over live data is never what an
// operator means.
func Restore(from, data string) error {
	if entries, err := os.ReadDir(data); err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: %s holds %d entries; restore into a new directory", ErrNotEmpty, data, len(entries))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ebb: restore: %w", err)
	}
	if _, err := os.Stat(filepath.Join(from, "MANIFEST")); err != nil {
		// Pebble names its manifest MANIFEST-NNNNNN; look for any.
		if m, _ := filepath.Glob(filepath.Join(from, "MANIFEST-*")); len(m) == 0 {
			return fmt.Errorf("%w: %s is not an ebb backup (no Pebble manifest)", store.ErrInvalid, from)
		}
	}
	if err := copyTree(from, data); err != nil {
		return fmt.Errorf("ebb: restore %s to %s: %w", from, data, err)
	}
	st, err := ebbpebble.Open(data, ebbpebble.Options{})
	if err != nil {
		return fmt.Errorf("ebb: restored data does not open: %w", err)
	}
	return st.Close()
}

// copyTree copies the regular files under from into to, syncing each.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

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
var ErrBackupUnsupported = store.Errorf(store.ErrInvalid, "backups through ebb are for the embedded backend; use the provider's backups (DynamoDB point-in-time recovery, CQL snapshots)")

// Backup is one backup taken by DB.Backup.
type Backup struct {
	Dir   string
	Bytes int64
	Took  time.Duration
}

// Backup writes a consistent copy of the embedded store into dir, which
// must not exist: every table, and ebb's metadata (index configs, shard
// history, sweeper watermarks, leases), so that a server restored from it
// neither re-deletes nor misses anything, and a manifest of its files that
// Restore verifies. The DB keeps serving meanwhile.
//
// A dir that is relative, holds a NUL byte, lies inside the data directory
// or cannot be created (under /proc, under a file) is refused with an error
// wrapping store.ErrInvalid, an existing one with store.ErrConflict, and a
// disk without room with store.ErrInsufficientStorage.
func (db *DB) Backup(ctx context.Context, dir string) (Backup, error) {
	cp, ok := store.As[store.Checkpointer](db.st)
	if !ok {
		return Backup{}, ErrBackupUnsupported
	}
	if !filepath.IsAbs(dir) {
		return Backup{}, store.Errorf(store.ErrInvalid, "backup directory %q must be an absolute path", dir)
	}
	start := db.o.Now()
	n, err := cp.Checkpoint(ctx, dir)
	if err != nil {
		return Backup{}, err
	}
	return Backup{Dir: filepath.Clean(dir), Bytes: n, Took: db.o.Now().Sub(start)}, nil
}

// ErrNotEmpty: Restore refuses to write into a data directory that holds
// anything.
var ErrNotEmpty = errors.New("ebb: data directory is not empty")

// ErrRestoreTarget: Restore refuses a data directory inside the backup (the
// copy would copy itself until the disk is full) and a backup inside the
// data directory. It wraps store.ErrInvalid.
var ErrRestoreTarget = store.Mark(store.ErrInvalid, "ebb", "the backup and the data directory overlap")

// ErrBackupDamaged: a backup is not as it was written (a file missing,
// truncated or altered; an sstable block failing its checksum). The message
// names the file.
var ErrBackupDamaged = ebbpebble.ErrDamaged

// ErrBackupNoManifest: a backup has no manifest of its files, as those
// taken before ebb wrote one; RestoreOptions.NoManifest accepts it.
var ErrBackupNoManifest = ebbpebble.ErrNoManifest

// RestoreOptions tells RestoreWith what to accept. The zero value is the
// strict default of Restore.
type RestoreOptions struct {
	// NoManifest restores a backup without a manifest, verifying only its
	// sstables' block checksums: a missing or truncated write-ahead log
	// (writes acknowledged shortly before the backup) then goes unnoticed.
	NoManifest bool
}

// Restore copies a backup taken by DB.Backup into data, an empty or
// missing directory, and checks that the result opens; see RestoreWith.
func Restore(from, data string) error {
	return RestoreWith(context.Background(), from, data, RestoreOptions{})
}

// RestoreWith copies a backup taken by DB.Backup into data, an empty or
// missing directory. Before writing anything it verifies the backup: every
// file its manifest lists is there, whole and unaltered, nothing else is,
// and every block of every sstable matches its checksum; a damaged backup
// is refused with an error wrapping ErrBackupDamaged that names the file.
// It then copies and syncs the files, verifies the copy the same way, and
// checks that it opens. It refuses a data directory that holds anything
// (restoring over live data is never what an operator means) and one that
// overlaps the backup (ErrRestoreTarget). A restore that fails after it
// started writing removes what it wrote.
func RestoreWith(ctx context.Context, from, data string, o RestoreOptions) error {
	if from == "" || data == "" {
		return store.Errorf(store.ErrInvalid, "restore needs a backup and a data directory")
	}
	if ebbpebble.Inside(data, from) {
		return store.Errorf(ErrRestoreTarget, "the data directory %s is inside the backup %s; restore into a directory outside it", data, from)
	}
	if ebbpebble.Inside(from, data) {
		return store.Errorf(ErrRestoreTarget, "the backup %s is inside the data directory %s; restore into a directory outside it", from, data)
	}
	_, statErr := os.Stat(data)
	if entries, err := os.ReadDir(data); err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: %s holds %d entries; restore into a new directory", ErrNotEmpty, data, len(entries))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ebb: restore: %w", err)
	}
	if fi, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: the backup %s does not exist", store.ErrInvalid, from)
	} else if err != nil {
		return fmt.Errorf("ebb: restore: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%w: the backup %s is not a directory", store.ErrInvalid, from)
	}
	if m, _ := filepath.Glob(filepath.Join(from, "MANIFEST-*")); len(m) == 0 {
		return store.Errorf(store.ErrInvalid, "%s is not an ebb backup (no Pebble manifest)", from)
	}
	vo := ebbpebble.VerifyOptions{NoManifest: o.NoManifest}
	names, err := ebbpebble.VerifyCheckpoint(ctx, from, vo)
	if err != nil {
		return fmt.Errorf("ebb: backup %s refused, nothing written: %w", from, err)
	}
	fail := func(err error) error {
		if errors.Is(statErr, fs.ErrNotExist) {
			_ = os.RemoveAll(data)
		} else {
			entries, _ := os.ReadDir(data)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(data, e.Name()))
			}
		}
		return err
	}
	if _, err := os.Stat(filepath.Join(from, ebbpebble.ManifestName)); err == nil {
		names = append(names, ebbpebble.ManifestName)
	}
	if err := copyFiles(from, data, names); err != nil {
		return fail(fmt.Errorf("ebb: restore %s to %s: %w", from, data, err))
	}
	if _, err := ebbpebble.VerifyCheckpoint(ctx, data, vo); err != nil {
		return fail(fmt.Errorf("ebb: the copy in %s does not match the backup: %w", data, err))
	}
	// The manifest describes the backup, not the data directory, which
	// changes as soon as a server runs on it.
	if err := os.Remove(filepath.Join(data, ebbpebble.ManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("ebb: restore: %w", err))
	}
	st, err := ebbpebble.Open(data, ebbpebble.Options{})
	if err != nil {
		return fail(fmt.Errorf("ebb: restored data does not open: %w", err))
	}
	if err := st.Close(); err != nil {
		return fail(fmt.Errorf("ebb: restored data does not close: %w", err))
	}
	return nil
}

// copyFiles copies the named files (slash-separated, relative) from from
// into to, syncing each file and each directory it writes into.
func copyFiles(from, to string, names []string) error {
	dirs := map[string]bool{}
	for _, name := range names {
		target := filepath.Join(to, filepath.FromSlash(name))
		dir := filepath.Dir(target)
		if !dirs[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			dirs[dir] = true
		}
		if err := copyFile(filepath.Join(from, filepath.FromSlash(name)), target); err != nil {
			return err
		}
	}
	for dir := range dirs {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return syncDir(to)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
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
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

package pebble

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ebb-data/ebb/store"
)

var _ store.Checkpointer = (*Store)(nil)

// Checkpoint writes a consistent copy of the whole store, every table and
// ebb's own metadata, into dir, which must not exist; see
// store.Checkpointer. The write-ahead log is flushed first, so every write
// acknowledged before the call is in the copy. Sstables are hard-linked
// where dir is on the same file system, so a checkpoint is cheap to take;
// copy it elsewhere to make it a backup.
func (s *Store) Checkpoint(ctx context.Context, dir string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// Shared: no table is dropped or created half-way through the copy.
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return 0, fmt.Errorf("pebble: checkpoint to %s: %w", dir, err)
	}
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	return size, err
}

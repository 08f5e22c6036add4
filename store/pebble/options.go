package pebble

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/store"
)

// Defaults of Options' sizes.
const (
	DefaultCacheSize    = 64 << 20
	DefaultMemTableSize = 64 << 20
	// maxMemTableSize is Pebble's own bound on a memtable.
	maxMemTableSize = 4<<30 - 1
)

// DefaultOptions returns the options Open uses for zero fields: the
// system clock and file system, a 64 MiB block cache and 64 MiB memtables,
// and synced writes.
func DefaultOptions() Options {
	return Options{Now: time.Now, FS: vfs.Default, CacheSize: DefaultCacheSize, MemTableSize: DefaultMemTableSize}
}

// Validate reports options Open refuses: negative sizes, and a memtable
// larger than Pebble allows.
func (o Options) Validate() error {
	if o.CacheSize < 0 {
		return fmt.Errorf("%w: pebble: Options.CacheSize %d is negative", store.ErrInvalid, o.CacheSize)
	}
	if o.MemTableSize < 0 || o.MemTableSize > maxMemTableSize {
		return fmt.Errorf("%w: pebble: Options.MemTableSize %d outside 0..%d", store.ErrInvalid, o.MemTableSize, int64(maxMemTableSize))
	}
	return nil
}

package pebble

import (
	"math"
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
	// memTableStopWrites is how many memtables' worth of bytes Pebble
	// lets pile up, the one taking writes and those waiting to flush,
	// before it stalls writers (its own default).
	memTableStopWrites = 2
)

// cacheBytes is the size of the block cache Open makes: the blocks' share
// plus the memtables'. Pebble reserves each memtable's size in the block
// cache while it lives (Cache.Reserve in its newMemTable), to bound the
// memory of the two together. A cache no larger than the memtables holds
// no block at all once they have grown to full size: with 64 MiB of each,
// every read of a large list went to disk and decompressed its blocks
// again (docs/performance.md, "List reads by list size").
func cacheBytes(blocks, memTable int64) int64 {
	return blocks + memTableStopWrites*memTable
}

// DefaultOptions returns the options Open uses for zero fields: the
// system clock and file system, 64 MiB of cached blocks and 64 MiB
// memtables, and synced writes.
func DefaultOptions() Options {
	return Options{Now: time.Now, FS: vfs.Default, CacheSize: DefaultCacheSize, MemTableSize: DefaultMemTableSize}
}

// Validate reports options Open refuses: negative sizes, a memtable
// larger than Pebble allows, and a cache whose size overflows once the
// memtables' share is added.
func (o Options) Validate() error {
	if o.CacheSize < 0 || o.CacheSize > math.MaxInt64-memTableStopWrites*maxMemTableSize {
		return store.Errorf(store.ErrInvalid, "pebble: Options.CacheSize %d is negative or too large", o.CacheSize)
	}
	if o.MemTableSize < 0 || o.MemTableSize > maxMemTableSize {
		return store.Errorf(store.ErrInvalid, "pebble: Options.MemTableSize %d outside 0..%d", o.MemTableSize, int64(maxMemTableSize))
	}
	return nil
}

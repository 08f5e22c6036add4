package peers

import (
	"context"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// pebblePeer is raw Pebble with the options ebb's embedded store gives it
// (memtable and block cache sizes, format): the floor of ebb's own write
// path. It has no expiry; reclaim deletes every key with one range
// deletion and compacts the range.
type pebblePeer struct {
	db      *pebble.DB
	wo      *pebble.WriteOptions
	deleted bool
}

func openRawPebble(_ context.Context, dir string, w Workload) (peer, error) {
	// Pebble charges its memtables to the block cache, so ebb's store
	// sizes the cache as its blocks plus the two memtables it allows
	// (store/pebble's options.go); so does this twin.
	cache := pebble.NewCache(ebbpebble.DefaultCacheSize + 2*ebbpebble.DefaultMemTableSize)
	defer cache.Unref()
	db, err := pebble.Open(dir, &pebble.Options{
		Cache:                       cache,
		MemTableSize:                ebbpebble.DefaultMemTableSize,
		MemTableStopWritesThreshold: 2,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      quietLogger{},
	})
	if err != nil {
		return nil, err
	}
	p := &pebblePeer{db: db, wo: pebble.NoSync}
	if w.Sync {
		p.wo = pebble.Sync
	}
	return p, nil
}

func (p *pebblePeer) write(batch []timeseries.Event) error {
	b := p.db.NewBatch()
	defer b.Close()
	var key []byte // Set copies it
	for i := range batch {
		key = eventKey(key[:0], &batch[i])
		if err := b.Set(key, batch[i].Payload, nil); err != nil {
			return err
		}
	}
	return b.Commit(p.wo)
}

func (p *pebblePeer) expiredAt() time.Time { return time.Time{} }

func (p *pebblePeer) reclaim(ctx context.Context) error {
	if p.deleted {
		return nil
	}
	p.deleted = true
	start, end := []byte{0}, []byte{0xff}
	if err := p.db.DeleteRange(start, end, p.wo); err != nil {
		return err
	}
	return p.db.Compact(ctx, start, end, true)
}

func (p *pebblePeer) close() error { return p.db.Close() }

func (p *pebblePeer) isLog(name string) bool { return strings.HasSuffix(name, ".log") }

// quietLogger drops Pebble's informational lines, as ebb's store does
// unless given a logger.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

package peers

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/ebb-data/ebb/timeseries"
)

// eventKey is how Badger and raw Pebble key an event: index id, a zero
// byte, the timestamp in big-endian Unix milliseconds, the event id. An
// index's events are contiguous and time-ordered, as in ebb's shards.
func eventKey(dst []byte, e *timeseries.Event) []byte {
	dst = append(dst, e.IndexID...)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.Timestamp.UnixMilli()))
	return append(dst, e.EventID...)
}

// badgerPeer is Badger with its default options, every entry written with
// the workload's TTL; a batch is one transaction.
type badgerPeer struct {
	db   *badger.DB
	ttl  time.Duration
	last atomic.Int64 // when the last batch was written, Unix nanoseconds
}

func openBadger(_ context.Context, dir string, w Workload) (peer, error) {
	db, err := badger.Open(badger.DefaultOptions(dir).WithSyncWrites(w.Sync).WithLogger(nil))
	if err != nil {
		return nil, err
	}
	return &badgerPeer{db: db, ttl: w.TTL}, nil
}

func (p *badgerPeer) write(batch []timeseries.Event) error {
	txn := p.db.NewTransaction(true)
	defer txn.Discard()
	for i := range batch {
		// Badger keeps the key and value until the commit.
		e := badger.NewEntry(eventKey(nil, &batch[i]), batch[i].Payload).WithTTL(p.ttl)
		if err := txn.SetEntry(e); err != nil {
			return err
		}
	}
	if err := txn.Commit(); err != nil {
		return err
	}
	for now := time.Now().UnixNano(); ; {
		last := p.last.Load()
		if last >= now || p.last.CompareAndSwap(last, now) {
			return nil
		}
	}
}

// expiredAt is when the last entry's TTL has passed: Badger keeps expiry
// in whole seconds, so a second later.
func (p *badgerPeer) expiredAt() time.Time {
	return time.Unix(0, p.last.Load()).Add(p.ttl + time.Second)
}

// reclaim is what Badger offers to free the space of expired entries:
// compacting every level into one (Flatten), then value-log garbage
// collection until it finds nothing to rewrite. Badger has no call that
// flushes its memtable; only Close does.
func (p *badgerPeer) reclaim(context.Context) error {
	if err := p.db.Flatten(2); err != nil {
		return err
	}
	for {
		err := p.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (p *badgerPeer) close() error { return p.db.Close() }

// isLog is false for every file: Badger's memtable files (.mem) hold its
// unflushed data, and its value logs are what its garbage collection frees.
func (p *badgerPeer) isLog(string) bool { return false }

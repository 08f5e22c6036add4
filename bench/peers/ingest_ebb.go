package peers

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/shardmgr"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// ebbIndex is the index the events go to: daily shards, hourly partitions,
// a week's retention, as `ebb bench` lays out its own.
var ebbIndex = timeseries.Config{Name: "events", TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 7 * 24 * time.Hour}

// ebbPeer is ebb as a library user opens it: the embedded store, the
// expiry decorator and metering over it, the shard manager and sweeper
// running. Its clock is the wall clock plus an offset that reclaim moves
// past the retention, so that every shard is due for dropping.
type ebbPeer struct {
	db      *ebb.DB
	offset  atomic.Int64 // nanoseconds added to the wall clock
	dropped bool
}

func openEbb(ctx context.Context, dir string, w Workload) (peer, error) {
	p := &ebbPeer{}
	now := func() time.Time { return time.Now().Add(time.Duration(p.offset.Load())) }
	// ebb.Open syncs every write; the store is opened here only to choose
	// the sync setting, with the DB's clock as ebb.Options asks.
	st, err := ebbpebble.Open(dir, ebbpebble.Options{NoSync: !w.Sync, Now: now})
	if err != nil {
		return nil, err
	}
	if p.db, err = ebb.Open(ctx, ebb.Options{Store: st, Now: now}); err != nil {
		return nil, err
	}
	if _, _, err := p.db.Indexes().Create(ctx, ebbIndex); err != nil {
		_ = p.db.Close()
		return nil, err
	}
	return p, nil
}

func (p *ebbPeer) write(batch []timeseries.Event) error {
	_, err := p.db.Indexes().WriteEvents(context.Background(), ebbIndex.Name, batch)
	return err
}

func (p *ebbPeer) expiredAt() time.Time { return time.Time{} }

// reclaim moves the clock past the retention of every event and applies
// the shard manager's plan until no drop is left (a pass drops at most a
// few shards).
func (p *ebbPeer) reclaim(ctx context.Context) error {
	if p.dropped {
		return nil
	}
	p.dropped = true
	p.offset.Add(int64(ebbIndex.Retention + 2*ebbIndex.TableBucket))
	for range 100 {
		plan, _, err := p.db.Indexes().Reconcile(ctx, ebbIndex.Name, shardmgr.RunOptions{AllowClockJump: true})
		if err != nil {
			return err
		}
		drops := 0
		for _, a := range plan.Pending() {
			if a.Op == shardmgr.OpDrop {
				drops++
			}
		}
		if drops == 0 {
			return nil
		}
	}
	return fmt.Errorf("ebb: shards still to drop after 100 passes")
}

func (p *ebbPeer) close() error { return p.db.Close() }

// isLog names Pebble's write-ahead logs: Pebble preallocates each to 1.1
// times the memtable size and keeps a few obsolete ones for reuse.
func (p *ebbPeer) isLog(name string) bool { return strings.HasSuffix(name, ".log") }

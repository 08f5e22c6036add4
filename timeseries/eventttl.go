package timeseries

import (
	"context"
	"errors"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/store"
)

// ErrTTLShard: an event with a TTL of its own falls in a shard created
// before shards took per-row expiries, which refuses any. Nothing was
// written; the event can be written without a TTL, or with one once the
// shards created since hold its time. Also matches store.ErrInvalid.
var ErrTTLShard = store.Mark(store.ErrInvalid, "timeseries", "shard takes no per-event ttl")

// CheckTTL reports whether ttl is a valid Event.TTL for an index of
// configuration cfg: positive, whole milliseconds, and shorter than the
// retention (an event never outlives its shard's retention). Zero, which
// an Event reads as "no TTL", is refused here as for the HTTP API, which
// tells an absent ttl from a zero one.
func CheckTTL(cfg Config, ttl time.Duration) error {
	if ttl <= 0 || ttl%time.Millisecond != 0 {
		return store.Errorf(store.ErrInvalid, "ttl %s must be a positive whole number of milliseconds", durfmt.Format(ttl))
	}
	if ttl >= cfg.Retention {
		return store.Errorf(store.ErrInvalid, "ttl %s must be shorter than the index's retention %s", durfmt.Format(ttl), durfmt.Format(cfg.Retention))
	}
	return nil
}

// checkTTLShards refuses the batch, before anything is written, when an
// event with a TTL falls in a shard whose spec declares that its rows never
// expire (created before shards took per-row expiries): the store would
// refuse that shard's write after earlier shards were written. A shard
// found to accept expiries is remembered, so a batch pays at most one
// catalog read per shard for the life of the process, and a batch without
// TTLs none.
func (s *Service) checkTTLShards(ctx context.Context, cfg Config, index string, events []Event, order []int, shardOf []int64) error {
	for _, i := range order {
		if events[i].TTL == 0 {
			continue
		}
		table := cfg.shardTable(shardOf[i])
		if _, ok := s.ttlShards.Load(table); ok {
			continue
		}
		spec, err := s.st.Spec(ctx, table)
		if errors.Is(err, store.ErrTableNotFound) {
			continue // dropped since it was listed: the write says so
		}
		if err != nil {
			return err
		}
		if spec.NeverExpires {
			s.metrics.refused(index, reasonInvalid)
			return &store.MutationError{Noun: "event", Index: i, Err: store.Errorf(ErrTTLShard,
				"%s: shard %s was created before shards took per-event ttls; write this event without a ttl", index, table)}
		}
		s.ttlShards.Store(table, struct{}{})
	}
	return nil
}

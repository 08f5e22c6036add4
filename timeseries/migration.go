package timeseries

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Router takes over the reads and writes of indexes that migrate from a
// legacy table (package migrate implements it). Put and Query ask it
// first; when it does not handle a call (handled false: the index does not
// migrate, or has cut over) the shards serve it as usual. A Router reaches
// the shards through PutShards and QueryShards, never Put and Query.
type Router interface {
	RoutePut(ctx context.Context, index string, events []Event) (n int, handled bool, err error)
	RouteQuery(ctx context.Context, index string, q Query) (page Page, handled bool, err error)
}

type routerBox struct{ Router }

// SetRouter installs r in front of Put and Query; nil removes it. It is
// safe to call while the Service serves.
func (s *Service) SetRouter(r Router) {
	if r == nil {
		s.router.Store(nil)
		return
	}
	s.router.Store(&routerBox{r})
}

// IndexConfig returns an index's config, from the cache while it is
// fresh (Options.CacheTTL).
func (s *Service) IndexConfig(ctx context.Context, name string) (Config, error) {
	return s.config(ctx, name)
}

// HasShard reports whether the shard holding ts exists, refreshing the
// cached shard list once when it does not appear in it.
func (s *Service) HasShard(ctx context.Context, cfg Config, ts time.Time) (bool, error) {
	want := cfg.shardOf(ts.UnixMilli())
	for _, refresh := range []bool{false, true} {
		starts, err := s.shardStarts(ctx, cfg, refresh)
		if err != nil {
			return false, err
		}
		if _, ok := slices.BinarySearch(starts, want); ok {
			return true, nil
		}
	}
	return false, nil
}

// CheckEvent reports what Put would refuse in e whatever the index: an
// empty, oversize or malformed index_id or event_id, or a timestamp
// outside 1970..9999. Errors wrap store.ErrInvalid.
func CheckEvent(e Event) error {
	if err := checkID("index_id", e.IndexID); err != nil {
		return err
	}
	if err := checkID("event_id", e.EventID); err != nil {
		return err
	}
	if err := timefmt.UnixYears.Check(e.Timestamp); err != nil {
		return store.Errorf(store.ErrInvalid, "%v", err)
	}
	return nil
}

// Position is a place in an index_id's events: the event at Timestamp
// (millisecond precision) with EventID. Page tokens are positions. An
// empty EventID (no event has one) is the edge where a page stopped at the
// read budget: in ascending order before every event at Timestamp, in
// descending order after every one; resuming from it reads on from
// Timestamp (ascending) or from just before it (descending).
type Position struct {
	Timestamp time.Time
	EventID   string
}

// PositionToken returns the page token that resumes a query of c, in the
// given order, strictly after the event at p. It is the token Query itself
// hands out, so a page of one source can be resumed by another.
func (c Config) PositionToken(p Position, desc bool) []byte {
	return encodeToken(c, p.Timestamp.UnixMilli(), p.EventID, desc)
}

// DecodePosition decodes a page token of a query of c in the given order.
// A malformed token, or one of the other order, wraps store.ErrInvalid.
func (c Config) DecodePosition(token []byte, desc bool) (Position, error) {
	p, err := decodeToken(c, token, desc)
	if err != nil {
		return Position{}, err
	}
	return Position{Timestamp: time.UnixMilli(p.ts).UTC(), EventID: p.eventID}, nil
}

// Window returns the timestamps, in Unix ms [lo, hi), a query of [from,
// to) reads at now: clipped to the retention window, as Query clips it.
// A zero from or to is unbounded; lo >= hi means nothing is live in the
// range.
func (c Config) Window(now, from, to time.Time) (lo, hi int64) {
	lo = max(floorMs(now.Add(-c.Retention))+1, 0)
	if !from.IsZero() {
		lo = max(lo, ceilMs(from))
	}
	hi = int64(math.MaxInt64)
	if !to.IsZero() {
		hi = ceilMs(to)
	}
	return lo, hi
}

package timeseries

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Query selects events of one index_id.
type Query struct {
	IndexID string
	// From and To bound the timestamps: [From, To). A zero From is
	// unbounded below (the retention window bounds it anyway); a zero To
	// is unbounded above.
	From, To time.Time
	// Desc returns the newest first; the default is oldest first. Events
	// are ordered by (timestamp, event_id), reversed for Desc.
	Desc bool
	// Limit is the most events to return: 1..store.MaxLimit; zero means
	// store.DefaultLimit, as it does for the HTTP API.
	Limit int
	// PageToken resumes after the last event of a previous page of the same
	// query; nil starts at the beginning.
	PageToken []byte
	// MaxBytes, when positive, ends the page early, with a NextPageToken,
	// once the events read add up to at least MaxBytes (counting each
	// event's payload, index_id and event_id). A page always holds at
	// least one event when one is in range, so it may exceed MaxBytes by
	// at most one event. Events are read one at a time, so that a page of
	// large events never holds more than that in memory. Zero bounds the
	// page by Limit alone.
	MaxBytes int
}

// Page is one page of events.
type Page struct {
	Events []Event
	// NextPageToken is nil when the range is known to be exhausted. It may
	// be set on a page that happened to end exactly at the last event, in
	// which case the next page is empty: finding out would mean reading
	// partitions the page did not need. It is also set on a page that
	// stopped at the read budget (Options.MaxPartitions), which may hold
	// fewer than Limit events, or none: only a nil token ends the range.
	NextPageToken []byte
}

// QueryEvents returns live events of q.IndexID in [From, To) clipped to
// the retention window, in order (named as the HTTP route, GET
// /v1/indexes/{name}/events, and package client's Client.QueryEvents). It visits shards, and partition buckets
// within them, in the query's order, touching only those the range covers,
// and stops as soon as it has Limit events, or once it has visited
// Options.MaxPartitions partitions: then the page holds what was found,
// and its token resumes at the first partition not visited. It stops with
// ctx's error once ctx is done, between two partitions.
//
// While the index migrates from a legacy table (see SetRouter), the router
// decides which source answers; QueryShards always reads the shards.
func (s *Service) QueryEvents(ctx context.Context, index string, q Query) (Page, error) {
	if q.Limit == 0 {
		q.Limit = store.DefaultLimit
	}
	if r := s.router.Load(); r != nil {
		if p, handled, err := r.RouteQuery(ctx, index, q); handled {
			return p, err
		}
	}
	return s.QueryShards(ctx, index, q)
}

// QueryShards is QueryEvents on the shards alone, whatever the index's
// migration phase.
func (s *Service) QueryShards(ctx context.Context, index string, q Query) (Page, error) {
	cfg, err := s.config(ctx, index)
	if err != nil {
		return Page{}, err
	}
	if err := checkID("index_id", q.IndexID); err != nil {
		return Page{}, err
	}
	if q.Limit == 0 {
		q.Limit = store.DefaultLimit
	}
	if err := store.CheckLimit(q.Limit); err != nil {
		return Page{}, err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return Page{}, store.Errorf(store.ErrInvalid, "from %s is not before to %s",
			timefmt.Format(q.From), timefmt.Format(q.To))
	}
	var pos *position
	if len(q.PageToken) > 0 {
		p, err := decodeToken(cfg, q.PageToken, q.Desc)
		if err != nil {
			return Page{}, err
		}
		pos = &p
	}

	// The range in Unix ms, [lo, hi). An event is live while ts +
	// retention > now, so the oldest live ms is floor(now - retention) + 1.
	now := s.now()
	live := max(floorMs(now.Add(-cfg.Retention))+1, 0)
	lo := live
	// Shards restored from the index's archive are read whatever their
	// age: the range reaches back to the oldest, and only their
	// partitions are read before the retention window.
	var restored map[int64]bool
	if cfg.archiveTo() != "" {
		var err error
		if restored, err = s.restoredStarts(ctx, cfg); err != nil {
			return Page{}, err
		}
		for start := range restored {
			lo = min(lo, start)
		}
	}
	if !q.From.IsZero() {
		lo = max(lo, ceilMs(q.From))
	}
	hi := int64(math.MaxInt64)
	if !q.To.IsZero() {
		hi = ceilMs(q.To)
	}
	if pos != nil && pos.eventID == "" {
		// A page that stopped at the budget resumes at a partition's
		// edge: the range narrows to what lies beyond it.
		if q.Desc {
			hi = min(hi, pos.ts)
		} else {
			lo = max(lo, pos.ts)
		}
		pos = nil
	}
	page := Page{Events: []Event{}}
	if lo >= hi {
		return page, nil
	}
	// A token outside the range (its events expired meanwhile, or another
	// range) resumes from the range's edge.
	if pos != nil && (pos.ts < lo || pos.ts >= hi) {
		if (pos.ts < lo) != q.Desc {
			pos = nil
		} else {
			return page, nil // the position is past the range's end
		}
	}

	starts, err := s.shardStarts(ctx, cfg, false)
	if err != nil {
		return Page{}, err
	}
	// Resuming narrows the partitions to visit to those from the token's
	// bucket on; the token's own bound is applied in its partition.
	elo, ehi := lo, hi
	if pos != nil {
		_, pb := cfg.layoutAt(pos.ts)
		if q.Desc {
			ehi = min(ehi, (pos.bucket+1)*pb)
		} else {
			elo = max(elo, pos.bucket*pb)
		}
	}
	if restored != nil {
		kept := make([]int64, 0, len(starts))
		for _, sh := range starts {
			if restored[sh] || cfg.shardEnd(sh) > live {
				kept = append(kept, sh)
			}
		}
		starts = kept
	}
	cur := newCursor(cfg, starts, elo, ehi, q.Desc)
	pageBytes, visited := 0, 0
	for p, ok := cur.next(); ok; p, ok = cur.next() {
		// Between partitions, since a backend's read of an empty one may
		// not look at ctx at all, and a range may cover many of them.
		if err := ctx.Err(); err != nil {
			return Page{}, fmt.Errorf("timeseries: query %s: %w", index, err)
		}
		if visited == s.maxPart {
			// The budget is spent and p is yet to be read: the page ends
			// here, short or even empty, and the next one starts at p.
			page.NextPageToken = edgeToken(cfg, p, lo, hi, q.Desc)
			break
		}
		visited++
		want := q.Limit - len(page.Events)
		plo := lo
		if !restored[p.shard] {
			plo = max(lo, live)
		}
		if plo >= min(hi, p.hi) {
			continue // before the retention window, in a shard not restored
		}
		sq := store.Query{
			Partition: []any{q.IndexID, p.bucket},
			Low:       store.Bound{Values: []any{time.UnixMilli(max(plo, p.lo)).UTC()}, Inclusive: true},
			High:      store.Bound{Values: []any{time.UnixMilli(min(hi, p.hi)).UTC()}},
			Reverse:   q.Desc,
			// One more than needed tells whether the partition has more.
			Limit: min(want+1, store.MaxLimit),
		}
		if pos != nil && p.shard == pos.shard && p.bucket == pos.bucket {
			after := store.Bound{Values: []any{time.UnixMilli(pos.ts).UTC(), pos.eventID}}
			if q.Desc {
				sq.High = after
			} else {
				sq.Low = after
			}
		}
		// Rows are scanned one at a time rather than read as a page, so
		// that a byte-bounded page stops reading at its bound.
		var more, full bool
		seen := 0
		next, err := s.st.Scan(ctx, cfg.shardTable(p.shard), sq, func(r *store.RawRow) error {
			if seen == want {
				more = true // the row past the page: another page follows
				return errPageDone
			}
			seen++
			e, err := rawEvent(q.IndexID, r)
			if err != nil {
				return err
			}
			page.Events = append(page.Events, e)
			if q.MaxBytes > 0 {
				pageBytes += len(e.Payload) + len(e.IndexID) + len(e.EventID)
				if pageBytes >= q.MaxBytes {
					full = true
					return errPageDone
				}
			}
			return nil
		})
		if errors.Is(err, store.ErrTableNotFound) {
			// Dropped since it was listed; whatever it held is expired.
			s.invalidateShards(index)
			continue
		}
		if err != nil && !errors.Is(err, errPageDone) {
			return Page{}, fmt.Errorf("timeseries: query %s: %w", cfg.shardTable(p.shard), err)
		}
		if err == nil && seen == want && next != nil {
			more = true
		}
		if full {
			// The byte bound ends the page: another may follow, and
			// finding out would mean reading past the bound.
			last := page.Events[len(page.Events)-1]
			page.NextPageToken = encodeToken(cfg, last.Timestamp.UnixMilli(), last.EventID, q.Desc)
			break
		}
		if len(page.Events) < q.Limit {
			continue
		}
		if more || cur.hasNext() {
			last := page.Events[len(page.Events)-1]
			page.NextPageToken = encodeToken(cfg, last.Timestamp.UnixMilli(), last.EventID, q.Desc)
		}
		break
	}
	return page, nil
}

// part is one partition to visit: a bucket of one shard, with the bucket's
// time bounds in Unix ms.
type part struct {
	shard, bucket int64
	lo, hi        int64
}

// cursor walks the partitions covering [lo, hi) in the existing shards, in
// query order, lazily: a range may cover far more partitions than a page
// visits. Each shard is walked in the layout in force at its start, so a
// range across a layout change reads the shards of both layouts, each by
// its own partition bucket; shards never overlap in time, so the order
// holds across the change.
type cursor struct {
	cfg    Config
	shards []int64 // overlapping shards, in query order
	lo, hi int64
	desc   bool
	si     int   // current shard
	tb, pb int64 // the current shard's table and partition buckets, ms
	b      int64 // next bucket in the current shard
	ok     bool  // b is valid
}

func newCursor(cfg Config, starts []int64, lo, hi int64, desc bool) *cursor {
	c := &cursor{cfg: cfg, lo: lo, hi: hi, desc: desc}
	for _, sh := range starts {
		if cfg.shardEnd(sh) > lo && sh < hi {
			c.shards = append(c.shards, sh)
		}
	}
	if desc {
		slices.Reverse(c.shards)
	}
	c.si = -1
	c.advanceShard()
	return c
}

// bounds returns the first and last bucket of shard sh inside the range.
func (c *cursor) bounds(sh int64) (first, last int64) {
	return max(c.lo, sh) / c.pb, min(c.hi-1, sh+c.tb-1) / c.pb
}

func (c *cursor) advanceShard() {
	c.si++
	c.ok = c.si < len(c.shards)
	if !c.ok {
		return
	}
	c.tb, c.pb = c.cfg.layoutAt(c.shards[c.si])
	first, last := c.bounds(c.shards[c.si])
	c.b = first
	if c.desc {
		c.b = last
	}
}

func (c *cursor) hasNext() bool { return c.ok }

func (c *cursor) next() (part, bool) {
	if !c.ok {
		return part{}, false
	}
	sh := c.shards[c.si]
	pb := c.pb
	p := part{shard: sh, bucket: c.b, lo: c.b * pb, hi: (c.b + 1) * pb}
	first, last := c.bounds(sh)
	if c.desc {
		c.b--
	} else {
		c.b++
	}
	if c.b < first || c.b > last {
		c.advanceShard()
	}
	return p, true
}

// edgeToken is the token of a page that stops before partition p: the
// edge of p where the read enters it, in [lo, hi], with no event ID (event
// IDs are never empty, so the position lies before, in the query's order,
// every event at the edge). Resuming from it narrows the range to p and
// what follows.
func edgeToken(cfg Config, p part, lo, hi int64, desc bool) []byte {
	if desc {
		return encodeToken(cfg, min(p.hi, hi), "", desc)
	}
	return encodeToken(cfg, max(p.lo, lo), "", desc)
}

// errPageDone stops a shard scan once the page has what it needs.
var errPageDone = errors.New("timeseries: page done")

// rawEvent decodes a scanned shard row of indexID, copying the payload
// out of the store's buffer.
func rawEvent(indexID string, r *store.RawRow) (Event, error) {
	ck, err := store.DecodeClustering(&shardSchema, r.Clustering)
	if err != nil {
		return Event{}, fmt.Errorf("timeseries: decode event key: %w", err)
	}
	e := Event{IndexID: indexID, Payload: []byte{}}
	e.Timestamp, _ = ck[0].(time.Time)
	e.EventID, _ = ck[1].(string)
	if len(r.Values) > 0 && len(r.Values[0]) > 0 {
		e.Payload = bytes.Clone(r.Values[0])
	}
	return e, nil
}

// floorMs and ceilMs round t to Unix milliseconds.
func floorMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).After(t) {
		ms-- // UnixMilli truncates towards zero before 1970
	}
	return ms
}

func ceilMs(t time.Time) int64 {
	ms := floorMs(t)
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// position is where a page ended: the last event returned, or, with an
// empty eventID, the edge of the partition a page stopped before (see
// edgeToken).
type position struct {
	shard, bucket int64 // shard start (Unix ms) and partition bucket
	ts            int64 // Unix ms
	eventID       string
}

// Page token layout, version 1:
//
//	version(1) flags(1: bit 0 = desc) shard-start-ms(8) bucket(8) ts-ms(8) event_id
//
// An empty event_id marks a partition's edge (edgeToken): the page stopped
// at the read budget there, and the next one starts at ts-ms (ascending)
// or just before it (descending).
//
// The shard and bucket are redundant with ts; they are checked on decode so
// that a token of another index layout, or a corrupted one, is refused
// instead of resuming somewhere else. A token made under any of the
// index's layout epochs (Config.Layouts) is accepted, and read in the
// layout in force at its ts, so that tokens stay valid across a layout
// change.
const tokenVersion = 1

func encodeToken(cfg Config, tsMs int64, eventID string, desc bool) []byte {
	b := make([]byte, 0, 26+len(eventID))
	flags := byte(0)
	if desc {
		flags = 1
	}
	b = append(b, tokenVersion, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(cfg.shardOf(tsMs)))
	b = binary.BigEndian.AppendUint64(b, uint64(cfg.bucketOf(tsMs)))
	b = binary.BigEndian.AppendUint64(b, uint64(tsMs))
	return append(b, eventID...)
}

func decodeToken(cfg Config, b []byte, desc bool) (position, error) {
	bad := func(why string) (position, error) {
		return position{}, store.Errorf(store.ErrInvalid, "malformed page token (%s)", why)
	}
	if len(b) < 26 || b[0] != tokenVersion || b[1]&^1 != 0 {
		return bad("unknown format")
	}
	if (b[1] == 1) != desc {
		return bad("it belongs to a query in the other order")
	}
	p := position{
		shard:   int64(binary.BigEndian.Uint64(b[2:])),
		bucket:  int64(binary.BigEndian.Uint64(b[10:])),
		ts:      int64(binary.BigEndian.Uint64(b[18:])),
		eventID: string(b[26:]),
	}
	if p.ts < 0 || p.ts >= maxTime.UnixMilli() || !tokenLayout(cfg, p) {
		return bad("position does not match the index layout")
	}
	p.shard, p.bucket = cfg.shardOf(p.ts), cfg.bucketOf(p.ts)
	if len(p.eventID) > MaxIDBytes || !utf8.ValidString(p.eventID) {
		return bad("bad event id")
	}
	return p, nil
}

// tokenLayout reports whether p's shard and bucket are those of p.ts in
// one of cfg's layouts.
func tokenLayout(cfg Config, p position) bool {
	for _, l := range cfg.layoutList() {
		tb, pb := l.TableBucket.Milliseconds(), l.PartitionBucket.Milliseconds()
		if p.shard == p.ts/tb*tb && p.bucket == p.ts/pb {
			return true
		}
	}
	return false
}

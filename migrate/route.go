package migrate

import (
	"bytes"
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

var _ timeseries.Router = (*Service)(nil)

// RoutePut writes events of a migrating index as its phase says; see
// Phase. Indexes that do not migrate, or have cut over, are not handled.
func (s *Service) RoutePut(ctx context.Context, index string, events []timeseries.Event) (int, bool, error) {
	st, err := s.state(ctx, index)
	if err != nil {
		return 0, true, err
	}
	if st == nil || st.Phase == Cutover {
		return 0, false, nil
	}
	cfg, err := s.idx.IndexConfig(ctx, index)
	if err != nil {
		return 0, true, err
	}
	if len(events) > timeseries.MaxBatch {
		return 0, true, store.Errorf(store.ErrTooLarge, "%d events in one batch, at most %d", len(events), timeseries.MaxBatch)
	}
	if len(events) == 0 {
		return 0, true, nil
	}
	// The batch is checked whole first, as the shards check it: nothing
	// is written to either side of a batch that one of them refuses for
	// its content.
	now := s.now()
	for i, e := range events {
		if err := timeseries.CheckEvent(e); err != nil {
			return 0, true, &store.MutationError{Noun: "event", Index: i, Err: err}
		}
		if e.TTL != 0 {
			// A legacy table keeps one TTL for every row: an event's own
			// would be lost on that side.
			return 0, true, &store.MutationError{Noun: "event", Index: i, Err: store.Errorf(store.ErrInvalid,
				"%s: a per-event ttl is refused while the index migrates from a legacy table (until cutover)", index)}
		}
		if !e.Timestamp.Truncate(time.Millisecond).Add(cfg.Retention).After(now) {
			return 0, true, &store.MutationError{Noun: "event", Index: i, Err: store.Errorf(timeseries.ErrExpired, "timestamp %s + retention %s <= now",
				timefmt.Format(e.Timestamp), durfmt.Format(cfg.Retention))}
		}
	}
	src, err := s.source(ctx, st)
	if err != nil {
		return 0, true, err
	}
	writeLegacy := func() error {
		if !st.WriteLegacy {
			return nil
		}
		ttl := legacyTTL(st, cfg)
		rows := make([]Row, 0, len(events))
		for _, e := range events {
			exp := e.Timestamp.Truncate(time.Millisecond).Add(ttl)
			if exp.After(now) { // already expired by its TTL: nothing to keep
				rows = append(rows, Row{Event: e, ExpiresAt: exp})
			}
		}
		return src.Write(ctx, rows)
	}
	c := s.counter(index)
	switch st.Phase {
	case ShadowWrite, ShadowRead:
		if err := writeLegacy(); err != nil {
			return 0, true, err
		}
		n, err := s.idx.PutShards(ctx, index, events)
		if err != nil {
			c.writeFailed(now)
			s.metrics.shadowFailures.WithLabelValues(index, "write").Inc()
			s.log.Warn("shadow write to the shards failed", "index", index, "events", len(events), "err", err)
			if !st.WriteLegacy {
				// The shards were the only write: the caller must know.
				return n, true, err
			}
		}
		return len(events), true, nil
	default: // MergedRead: both sides serve reads, so both must hold it.
		n, err := s.idx.PutShards(ctx, index, events)
		if err != nil {
			return n, true, err
		}
		if err := writeLegacy(); err != nil {
			return 0, true, err
		}
		return n, true, nil
	}
}

// RouteQuery answers a query of a migrating index as its phase says; see
// Phase. Page tokens are index positions (timeseries.Position), so a
// token stays good across sources and phase changes.
func (s *Service) RouteQuery(ctx context.Context, index string, q timeseries.Query) (timeseries.Page, bool, error) {
	st, err := s.state(ctx, index)
	if err != nil {
		return timeseries.Page{}, true, err
	}
	if st == nil || st.Phase == Cutover {
		return timeseries.Page{}, false, nil
	}
	cfg, err := s.idx.IndexConfig(ctx, index)
	if err != nil {
		return timeseries.Page{}, true, err
	}
	if err := checkQuery(q); err != nil {
		return timeseries.Page{}, true, err
	}
	src, err := s.source(ctx, st)
	if err != nil {
		return timeseries.Page{}, true, err
	}
	legacy, err := s.legacyPage(ctx, src, cfg, q)
	if err != nil {
		return timeseries.Page{}, true, err
	}
	switch st.Phase {
	case ShadowWrite:
		return legacy.page(cfg, q), true, nil
	case ShadowRead:
		if s.counter(index).sampled(st.SamplePercent) {
			shards, err := s.idx.QueryShards(ctx, index, q)
			if err != nil {
				s.metrics.shadowFailures.WithLabelValues(index, "read").Inc()
				s.counter(index).readFailed()
				s.log.Warn("shadow read of the shards failed", "index", index, "err", err)
			} else {
				s.compare(index, q, legacy, shards, shardStop(cfg, q, shards))
			}
		}
		return legacy.page(cfg, q), true, nil
	default: // MergedRead
		shards, err := s.idx.QueryShards(ctx, index, q)
		if err != nil {
			return timeseries.Page{}, true, err
		}
		return merge(cfg, q, shards, legacy), true, nil
	}
}

func checkQuery(q timeseries.Query) error {
	if err := timeseries.CheckEvent(timeseries.Event{IndexID: q.IndexID, EventID: "-", Timestamp: time.Unix(0, 0)}); err != nil {
		return err
	}
	if err := store.CheckLimit(q.Limit); err != nil {
		return err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return store.Errorf(store.ErrInvalid, "from %s is not before to %s",
			timefmt.Format(q.From), timefmt.Format(q.To))
	}
	return nil
}

// sourcePage is one page read from the legacy table.
type sourcePage struct {
	events []timeseries.Event
	more   bool
}

// page is the answer a legacy page makes on its own.
func (p sourcePage) page(cfg timeseries.Config, q timeseries.Query) timeseries.Page {
	out := timeseries.Page{Events: p.events}
	if p.more && len(p.events) > 0 {
		last := p.events[len(p.events)-1]
		out.NextPageToken = cfg.PositionToken(timeseries.Position{Timestamp: last.Timestamp, EventID: last.EventID}, q.Desc)
	}
	return out
}

// legacyPage reads up to q.Limit events of q from the legacy table,
// clipped to the index's retention window as the shards are.
func (s *Service) legacyPage(ctx context.Context, src Source, cfg timeseries.Config, q timeseries.Query) (sourcePage, error) {
	var pos *timeseries.Position
	if len(q.PageToken) > 0 {
		p, err := cfg.DecodePosition(q.PageToken, q.Desc)
		if err != nil {
			return sourcePage{}, err
		}
		pos = &p
	}
	now := s.now()
	lo, hi := cfg.Window(now, q.From, q.To)
	if pos != nil && pos.EventID == "" {
		// An edge where a page of the shards stopped at the read budget:
		// the range narrows to what lies beyond it, as the shards narrow
		// theirs.
		if ts := pos.Timestamp.UnixMilli(); q.Desc {
			hi = min(hi, ts)
		} else {
			lo = max(lo, ts)
		}
		pos = nil
	}
	out := sourcePage{events: []timeseries.Event{}}
	if lo >= hi {
		return out, nil
	}
	if pos != nil {
		// A position outside the range resumes from the range's edge, or
		// is past its end; as the shards treat it.
		if ts := pos.Timestamp.UnixMilli(); ts < lo || ts >= hi {
			if (ts < lo) != q.Desc {
				pos = nil
			} else {
				return out, nil
			}
		}
	}
	rows, more, err := src.Query(ctx, Range{IndexID: q.IndexID, Lo: lo, Hi: hi, After: pos, Desc: q.Desc, Limit: q.Limit}, now)
	if err != nil {
		return sourcePage{}, err
	}
	for _, r := range rows {
		out.events = append(out.events, r.Event)
	}
	out.more = more
	return out, nil
}

// key orders events as the index does: (timestamp, event_id).
func compareEvents(a, b timeseries.Event) int {
	return cmp.Or(a.Timestamp.Compare(b.Timestamp), strings.Compare(a.EventID, b.EventID))
}

// shardStop is where a page of the shards with a token stopped (the
// position its token resumes after: its last event, or the partition edge
// where the read budget ran out), or nil when the shards are exhausted.
// The shards have answered for every position up to it and none beyond.
func shardStop(cfg timeseries.Config, q timeseries.Query, shards timeseries.Page) *timeseries.Event {
	if shards.NextPageToken == nil {
		return nil
	}
	p, err := cfg.DecodePosition(shards.NextPageToken, q.Desc)
	if err != nil {
		// The shards' own token: cannot fail; if it did, their last
		// event is the stop, as before there were edges.
		if len(shards.Events) == 0 {
			return nil
		}
		return &shards.Events[len(shards.Events)-1]
	}
	return &timeseries.Event{IndexID: q.IndexID, Timestamp: p.Timestamp, EventID: p.EventID}
}

// merge merges a page of the shards and one of the legacy table, both
// ordered and starting at the same position, into one page: in order,
// deduplicated by (timestamp, event_id) with the shards' copy kept, at
// most q.Limit events, none past where the shards stopped (shardStop: a
// page of the shards cut short by its byte or partition budget has not
// looked beyond). Its token is the position of its last event when either
// source may hold more after it, or the shards' own token when the page
// holds everything up to where they stopped.
func merge(cfg timeseries.Config, q timeseries.Query, shards timeseries.Page, legacy sourcePage) timeseries.Page {
	dir := 1
	if q.Desc {
		dir = -1
	}
	a, b := shards.Events, legacy.events
	stop := shardStop(cfg, q, shards)
	clipped := false // legacy events lie beyond stop
	if stop != nil {
		n := 0
		for n < len(b) && compareEvents(b[n], *stop)*dir <= 0 {
			n++
		}
		b, clipped = b[:n], n < len(b)
	}
	out := make([]timeseries.Event, 0, min(q.Limit, len(a)+len(b)))
	i, j := 0, 0
	for (i < len(a) || j < len(b)) && len(out) < q.Limit {
		switch {
		case j == len(b):
			out = append(out, a[i])
			i++
		case i == len(a):
			out = append(out, b[j])
			j++
		default:
			switch c := compareEvents(a[i], b[j]) * dir; {
			case c < 0:
				out = append(out, a[i])
				i++
			case c > 0:
				out = append(out, b[j])
				j++
			default:
				out = append(out, a[i])
				i++
				j++
			}
		}
	}
	more := i < len(a) || j < len(b) || shards.NextPageToken != nil || legacy.more
	page := timeseries.Page{Events: out}
	if stop != nil && i == len(a) && j == len(b) && (clipped || !legacy.more) {
		// Everything both sources hold up to the shards' stop is in the
		// page (legacy events beyond it are left for the next one):
		// resume there.
		page.NextPageToken = shards.NextPageToken
		return page
	}
	if more && len(out) > 0 {
		last := out[len(out)-1]
		page.NextPageToken = cfg.PositionToken(timeseries.Position{Timestamp: last.Timestamp, EventID: last.EventID}, q.Desc)
	}
	return page
}

// Mismatch kinds.
const (
	// Missing: in the legacy table, not in the shards.
	Missing = "missing"
	// Extra: in the shards, not in the legacy table.
	Extra = "extra"
	// Different: in both, with different payloads.
	Different = "different"
)

// Mismatch is one event a shadow read found different.
type Mismatch struct {
	Kind      string    `json:"kind"`
	IndexID   string    `json:"index_id"`
	EventID   string    `json:"event_id"`
	Timestamp time.Time `json:"timestamp"`
	At        time.Time `json:"at"`
}

// compare counts the mismatches between a legacy page (the answer) and a
// shard page of the same query, over the positions both pages cover: up
// to the last event of the legacy page when it stopped short of the
// range's end, and up to stop (shardStop) when the shards did.
func (s *Service) compare(index string, q timeseries.Query, legacy sourcePage, shards timeseries.Page, stop *timeseries.Event) {
	dir := 1
	if q.Desc {
		dir = -1
	}
	var bound *timeseries.Event
	if legacy.more && len(legacy.events) > 0 {
		bound = &legacy.events[len(legacy.events)-1]
	}
	if stop != nil && (bound == nil || compareEvents(*stop, *bound)*dir < 0) {
		bound = stop
	}
	covered := func(e timeseries.Event) bool { return bound == nil || compareEvents(e, *bound)*dir <= 0 }
	now := s.now()
	c := s.counter(index)
	var found []Mismatch
	a, b := legacy.events, shards.Events
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var kind string
		var e timeseries.Event
		switch {
		case j == len(b) || (i < len(a) && compareEvents(a[i], b[j])*dir < 0):
			e, kind = a[i], Missing
			i++
		case i == len(a) || compareEvents(a[i], b[j])*dir > 0:
			e, kind = b[j], Extra
			j++
		default:
			e = a[i]
			if !bytes.Equal(a[i].Payload, b[j].Payload) {
				kind = Different
			}
			i++
			j++
		}
		if !covered(e) {
			break
		}
		if kind != "" {
			found = append(found, Mismatch{Kind: kind, IndexID: e.IndexID, EventID: e.EventID, Timestamp: e.Timestamp, At: now})
		}
	}
	c.compared(found, s.sample)
	s.metrics.compared.WithLabelValues(index).Inc()
	for _, m := range found {
		s.metrics.mismatches.WithLabelValues(index, m.Kind).Inc()
	}
}

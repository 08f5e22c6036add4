package timeseries

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Event is one indexed event.
type Event struct {
	// IndexID is what the index is queried by (an account, a user...):
	// 1..MaxIDBytes bytes of valid UTF-8, any characters.
	IndexID string
	// EventID identifies the event within (IndexID, Timestamp):
	// 1..MaxIDBytes bytes of valid UTF-8, any characters.
	EventID string
	// Timestamp, stored at millisecond precision; from 1970 on.
	Timestamp time.Time
	Payload   []byte
	// TTL, when positive, makes the event expire at Timestamp + TTL
	// instead of Timestamp + the index's retention: a whole number of
	// milliseconds, shorter than the retention. Zero means the retention.
	// Such an event is hidden from reads at its expiry to the millisecond
	// and removed from disk by the backend's default expiry mode (see
	// store.DefaultExpiryMode): swept within seconds on the embedded
	// backend and DynamoDB, by native TTL on CQL. An event without one
	// costs nothing more than before: no expiry-index entry.
	TTL time.Duration
}

// maxTime bounds timestamps: shard names hold at most 12 digits of
// seconds, and RFC 3339 ends at year 9999.
var maxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)

// Refusal reasons, the reason label of ebb_index_write_refused_total.
const (
	reasonInvalid  = "invalid"
	reasonTooLarge = "too_large"
	reasonExpired  = "expired"
	reasonNoShard  = "no_shard"
	reasonError    = "error"
)

// WriteEvents writes events to the index: idempotent upserts keyed by
// (IndexID, Timestamp, EventID), so retrying a failed write is safe. It is
// named as the HTTP route (POST /v1/indexes/{name}/events) and package
// client's Client.WriteEvents.
//
// The whole batch is checked before anything is written, and it is refused
// whole, with a *store.MutationError naming the first offending event, when any
// event is malformed (store.ErrInvalid, store.ErrTooLarge), already expired
// (timestamp + retention, or timestamp + its TTL, <= now: ErrExpired),
// carries a TTL that is negative, not whole milliseconds or not shorter
// than the retention (store.ErrInvalid), or falls in a shard that does not
// exist (ErrNoShard) or, for an event with a TTL, in a shard created
// before shards took per-row expiries (ErrTTLShard). Events are then written with one store.Write
// per shard. Only when the backend fails mid-way (or a shard is dropped
// concurrently) can part of the batch have been written; the error says so
// and retrying is safe.
//
// While the index migrates from a legacy table (see SetRouter), the router
// decides where the events go; PutShards always writes the shards.
func (s *Service) WriteEvents(ctx context.Context, index string, events []Event) (int, error) {
	if r := s.router.Load(); r != nil {
		if n, handled, err := r.RoutePut(ctx, index, events); handled {
			return n, err
		}
	}
	return s.PutShards(ctx, index, events)
}

// PutShards is WriteEvents on the shards alone, whatever the index's migration
// phase.
func (s *Service) PutShards(ctx context.Context, index string, events []Event) (int, error) {
	cfg, err := s.config(ctx, index)
	if err != nil {
		return 0, err
	}
	return s.putShards(ctx, index, cfg, events, false)
}

// putShards is PutShards with the index's config; reloaded says the
// config was read afresh since a missing shard was seen.
func (s *Service) putShards(ctx context.Context, index string, cfg Config, events []Event, reloaded bool) (int, error) {
	if len(events) > MaxBatch {
		s.metrics.refused(index, reasonTooLarge)
		return 0, store.Errorf(store.ErrTooLarge, "%d events in one batch, at most %d", len(events), MaxBatch)
	}
	if len(events) == 0 {
		return 0, nil
	}
	now := s.now()
	maxRow := s.st.Capabilities().MaxRowBytes
	buf := s.acquireWriteBuf(len(events))
	defer s.releaseWriteBuf(buf)
	ms := buf.ms
	for i := range events {
		e := &events[i]
		ts, err := checkEvent(cfg, e, now, maxRow)
		if err != nil {
			s.metrics.refused(index, refusalReason(err))
			return 0, &store.MutationError{Noun: "event", Index: i, Err: err}
		}
		ms[i] = ts
	}

	// Group by shard, keeping the batch's order within each, so that each
	// shard gets one Write. A batch nearly always falls in one shard.
	shardOf := buf.shardOf
	var shards []int64 // distinct, in order of first appearance
	for i, ts := range ms {
		shardOf[i] = cfg.shardOf(ts)
		if len(shards) == 0 || (shards[len(shards)-1] != shardOf[i] && !slices.Contains(shards, shardOf[i])) {
			shards = append(shards, shardOf[i])
		}
	}
	order := buf.order[:0]
	for _, sh := range shards {
		for i := range events {
			if shardOf[i] == sh {
				order = append(order, i)
			}
		}
	}

	// Every shard must exist before anything is written.
	starts, err := s.shardStarts(ctx, cfg, false)
	if err != nil {
		return 0, err
	}
	refreshed := false
	for _, i := range order {
		start := shardOf[i]
		if _, ok := slices.BinarySearch(starts, start); ok {
			continue
		}
		if !refreshed {
			// The manager (here or in another process) may have created
			// it since the list was cached. Another replica may have
			// changed the layout too: a layout change takes effect past
			// the runway, where shards are missing, so a config read
			// afresh here puts the events in the new layout's shards.
			refreshed = true
			if !reloaded {
				fresh, err := s.loadConfig(ctx, index)
				if err != nil {
					return 0, err
				}
				if !slices.Equal(fresh.Layouts, cfg.Layouts) {
					return s.putShards(ctx, index, fresh, events, true)
				}
			}
			if starts, err = s.shardStarts(ctx, cfg, true); err != nil {
				return 0, err
			}
			if _, ok := slices.BinarySearch(starts, start); ok {
				continue
			}
		}
		s.metrics.refused(index, reasonNoShard)
		return 0, &store.MutationError{Noun: "event", Index: i, Err: noShard(cfg, index, events[i].Timestamp, start, now)}
	}
	if err := s.checkTTLShards(ctx, cfg, index, events, order, shardOf); err != nil {
		return 0, err
	}

	muts := buf.build(cfg, events, order, s.ttlMode)
	written := 0
	for lo := 0; lo < len(order); {
		start := shardOf[order[lo]]
		hi := lo + 1
		for hi < len(order) && shardOf[order[hi]] == start {
			hi++
		}
		table := cfg.shardTable(start)
		if err := s.st.Write(ctx, table, muts[lo:hi]); err != nil {
			if errors.Is(err, store.ErrTableNotFound) {
				// Dropped since it was listed: only possible for data
				// past retention, or when the index was deleted.
				s.invalidateShards(index)
				s.metrics.refused(index, reasonNoShard)
				err = store.Errorf(ErrNoShard, "%s: shard %s is gone: %w", index, table, err)
			} else {
				s.metrics.refused(index, reasonError)
			}
			s.metrics.written(index, written)
			if written > 0 {
				return written, fmt.Errorf("timeseries: %d of %d events written before %s failed (retrying is safe): %w", written, len(events), table, err)
			}
			return 0, fmt.Errorf("timeseries: write %s: %w", table, err)
		}
		written += hi - lo
		lo = hi
	}
	s.metrics.written(index, written)
	return written, nil
}

// checkEvent validates one event at now and returns its timestamp in Unix
// milliseconds.
func checkEvent(cfg Config, e *Event, now time.Time, maxRow int) (int64, error) {
	if err := checkID("index_id", e.IndexID); err != nil {
		return 0, err
	}
	if err := checkID("event_id", e.EventID); err != nil {
		return 0, err
	}
	ts := e.Timestamp
	if err := timefmt.UnixYears.Check(ts); err != nil {
		return 0, store.Errorf(store.ErrInvalid, "%v", err)
	}
	tsMs := ts.UnixMilli()
	if !time.UnixMilli(tsMs).Add(cfg.Retention).After(now) {
		return 0, store.Errorf(ErrExpired, "timestamp %s + retention %s <= now %s",
			timefmt.Format(time.UnixMilli(tsMs)), durfmt.Format(cfg.Retention), timefmt.Format(now))
	}
	if e.TTL != 0 {
		if err := CheckTTL(cfg, e.TTL); err != nil {
			return 0, err
		}
		if !time.UnixMilli(tsMs).Add(e.TTL).After(now) {
			return 0, store.Errorf(ErrExpired, "timestamp %s + ttl %s <= now %s",
				timefmt.Format(time.UnixMilli(tsMs)), durfmt.Format(e.TTL), timefmt.Format(now))
		}
	}
	// The same size the store computes (kit.ResolveBatch), checked here
	// so that an oversize event refuses the batch before any shard is
	// written.
	if maxRow > 0 {
		size := encLen(e.IndexID) + 8 + 8 + encLen(e.EventID) + len(e.Payload) + len(colPayload) + 9
		if size > maxRow {
			return 0, store.Errorf(store.ErrTooLarge, "event is %d bytes stored, at most %d", size, maxRow)
		}
	}
	return tsMs, nil
}

// encLen is the length of s in the key encoding: NULs are escaped and a
// two-byte terminator added.
func encLen(s string) int { return len(s) + strings.Count(s, "\x00") + 2 }

func checkID(field, id string) error {
	switch {
	case id == "":
		return store.Errorf(store.ErrInvalid, "%s is empty", field)
	case len(id) > MaxIDBytes:
		return store.Errorf(store.ErrInvalid, "%s is %d bytes, at most %d", field, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return store.Errorf(store.ErrInvalid, "%s is not valid UTF-8", field)
	}
	return nil
}

func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrExpired):
		return reasonExpired
	case errors.Is(err, store.ErrTooLarge):
		return reasonTooLarge
	}
	return reasonInvalid
}

// writeBuf is the scratch space of one Put: per-event slices and the
// mutations, reused by later Puts so that a batch of 1000 events does not
// allocate a third of a megabyte of slices each time. That is sound because
// the store retains nothing passed to Write once it returns (see package
// store).
type writeBuf struct {
	ms      []int64 // timestamps, Unix ms, by event
	shardOf []int64 // shard starts, Unix ms, by event
	order   []int   // event indexes, grouped by shard
	muts    []store.Mutation
	keys    []any // four per mutation: partition then clustering
	cells   []store.Cell
	// parts shares one partition tuple among the events of a partition:
	// boxing the index id and bucket once per partition rather than once
	// per event.
	parts map[partKey][]any
}

type partKey struct {
	indexID string
	bucket  int64
}

// acquireWriteBuf returns a buffer for n events.
func (s *Service) acquireWriteBuf(n int) *writeBuf {
	b, _ := s.bufs.Get().(*writeBuf)
	if b == nil || cap(b.ms) < n {
		b = &writeBuf{
			ms:      make([]int64, n),
			shardOf: make([]int64, n),
			order:   make([]int, n),
			muts:    make([]store.Mutation, n),
			keys:    make([]any, 4*n),
			cells:   make([]store.Cell, n),
			parts:   map[partKey][]any{},
		}
	}
	b.ms, b.shardOf, b.order = b.ms[:n], b.shardOf[:n], b.order[:n]
	return b
}

// releaseWriteBuf makes b available to later Puts, first dropping its
// references to this batch's strings and payloads so that an idle buffer
// does not keep them alive.
func (s *Service) releaseWriteBuf(b *writeBuf) {
	n := len(b.ms)
	clear(b.keys[:4*n])
	clear(b.cells[:n])
	clear(b.parts)
	s.bufs.Put(b)
}

// build returns the upserts of events, in the given order, with canonical
// values: the timestamp in UTC at millisecond precision, a nil payload as
// empty. An event with a TTL gets its expiry, timestamp + TTL, in mode
// ttlMode; the others carry none, as shard rows always did. The mutations
// live in b and are valid until it is released.
func (b *writeBuf) build(cfg Config, events []Event, order []int, ttlMode store.ExpiryMode) []store.Mutation {
	n := len(order)
	muts, keys, cells := b.muts[:n], b.keys[:4*n], b.cells[:n]
	for j, i := range order {
		e, ms := &events[i], b.ms[i]
		payload := e.Payload
		if payload == nil {
			payload = []byte{}
		}
		k := keys[4*j : 4*j+4 : 4*j+4]
		pk := partKey{e.IndexID, cfg.bucketOf(ms)}
		part, ok := b.parts[pk]
		if !ok {
			k[0], k[1] = pk.indexID, pk.bucket
			part = k[0:2:2]
			b.parts[pk] = part
		}
		k[2], k[3] = time.UnixMilli(ms).UTC(), e.EventID
		cells[j] = store.Cell{Column: colPayload, Value: payload}
		muts[j] = store.Mutation{Partition: part, Clustering: k[2:4:4], Cells: cells[j : j+1 : j+1]}
		if e.TTL > 0 {
			muts[j].ExpiresAt = time.UnixMilli(ms + e.TTL.Milliseconds())
			muts[j].Expiry = ttlMode
		}
	}
	return muts
}

// noShard explains why the shard starting at start does not exist for an
// event at ts. Past the runway (the shard holding now and Runway shards
// after it) the manager is not late: it never creates shards that far
// ahead, and running it again changes nothing, so the message says where
// the runway ends instead of blaming the manager.
func noShard(cfg Config, index string, ts time.Time, start int64, now time.Time) error {
	end := cfg.shardOf(now.UnixMilli())
	for range cfg.Runway + 1 {
		end = cfg.shardEnd(end)
	}
	if start >= end {
		return store.Errorf(ErrNoShard, "%s: timestamp %s is past the runway, which ends at %s (%d shards of %s ahead of the one holding now); "+
			"write it once the runway reaches it, or raise the index's runway",
			index, timefmt.Format(ts), timefmt.Format(time.UnixMilli(end).UTC()), cfg.Runway, durfmt.Format(cfg.TableBucket))
	}
	return store.Errorf(ErrNoShard, "%s: timestamp %s needs shard %s, which the shard manager has not created yet",
		index, timefmt.Format(ts), cfg.shardTable(start))
}

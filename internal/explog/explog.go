// Package explog is the durable log of expirations: every row the expiry
// sweeper physically removed and every shard the shard manager dropped,
// kept in the store itself (Table) so that the stream a reader follows
// survives restarts and is the same through every replica.
//
// The log has two sources, each appended to by one process at a time (the
// holder of the sweeper's lease for rows, of the shard manager's for
// shards): SourceRows and SourceShards. Each source numbers its entries
// with a sequence that only grows: the entry's removal time in Unix
// microseconds, pushed past the source's last entry when the clock has not
// moved (or moved back). A source's entries are written in sequence order
// under one lock, so a reader that has seen sequence n of a source has
// seen every entry of it below n once those writes returned.
//
// Entries are grouped by source and hour (the partition), so that old
// hours are removed with one DeletePartition each, whatever their number
// of entries: retention costs a handful of operations an hour, never one
// per entry.
//
// A cursor names a position in both sources at once ("ROWS-SHARDS", two
// decimal sequences); readers treat it as opaque. Read merges the two
// sources in sequence order, which is removal order.
package explog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Table is the name of the table holding the log.
const Table = "ebb_expirations"

// Spec is the schema of Table: one partition per source and hour, entries
// in sequence order.
var Spec = store.TableSpec{
	Name: Table,
	PartitionKey: []store.Column{
		{Name: "src", Type: store.TypeText},
		{Name: "hour", Type: store.TypeInt64},
	},
	Clustering: []store.Column{{Name: "seq", Type: store.TypeInt64}},
	Values:     []store.Column{{Name: "ev", Type: store.TypeBytes}},
}

// The sources of the log.
const (
	SourceRows   = "rows"
	SourceShards = "shards"
)

// bucketUs is the width of one partition, in microseconds.
const bucketUs = int64(time.Hour / time.Microsecond)

// DefaultRetention is how long entries are kept when Options.Retention is
// zero.
const DefaultRetention = 24 * time.Hour

// Types of Event.
const (
	TypeRow   = "row"
	TypeShard = "shard"
)

// Kinds of what an Event names; they are the kinds of the HTTP API's
// scopes, so that a token sees an event exactly when it may read what the
// event names.
const (
	KindIndex = "index"
	KindList  = "list"
	KindTable = "table"
	// KindStore names a physical table that belongs to no feature; only
	// tokens that reach every resource see it.
	KindStore = "store"
)

// Event is one expiration.
type Event struct {
	// Cursor resumes a read just after this event.
	Cursor string `json:"cursor"`
	// Type is TypeRow or TypeShard.
	Type string `json:"type"`
	// Kind and Name say what the event belongs to: the index of a shard,
	// the entity type of a list item, the shared table of an item.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Feature and Version name a list feature's version (list items only).
	Feature string `json:"feature,omitempty"`
	Version string `json:"version,omitempty"`
	// Key is a row's key: [entity id, item key] for a list item, [key] for
	// a shared-table item, the key columns of any other row.
	Key []string `json:"key,omitempty"`
	// ExpiresAt is a row's expiry.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RemovedAt is when the row was deleted or the shard dropped.
	RemovedAt time.Time `json:"removed_at"`
	// Shard is a dropped shard's table; From and To bound its time range
	// [From, To).
	Shard string    `json:"shard,omitempty"`
	From  time.Time `json:"from,omitzero"`
	To    time.Time `json:"to,omitzero"`
	// Rows is how many rows a dropped shard held, when known.
	Rows *int64 `json:"rows,omitempty"`
	// Archive is where the shard was archived before its drop, if it was.
	Archive string `json:"archive,omitempty"`
}

// Options configure a Stream.
type Options struct {
	// Store holds Table. It should be the store below the expiry
	// decorator: the log's own rows carry no expiry.
	Store store.Store
	// Retention is how long entries are kept. Zero means
	// DefaultRetention.
	Retention time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// BatchSize bounds the entries of one Write. Zero means 100.
	BatchSize int
	// DeferRows, on a store with one ordered log (store.DeferredWriter),
	// writes the rows source's entries without a sync of their own: the
	// sweeper's delete, synced, comes right after and makes them durable
	// first, so a crash loses either both or neither, and the removal is
	// then repeated. It saves one sync per batch of removed rows, but a
	// reader sees the entries before that sync, and an entry lost to a
	// crash in between comes back under a later sequence, delivered a
	// second time past a cursor that had it: ebb.DB leaves it off.
	DeferRows bool
}

// Stream is the log: its two appenders and its reader.
type Stream struct {
	o            Options
	rows, shards *Log
	// settle holds back entries younger than it from readers (see
	// remoteSettle); zero on the embedded backend.
	settle time.Duration

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every append
}

// New returns the stream over o.Store; Ensure creates its table.
func New(o Options) *Stream {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	s := &Stream{o: o, changed: make(chan struct{})}
	if o.Store.Capabilities().SharedAcrossProcesses {
		s.settle = remoteSettle
	}
	s.rows = &Log{s: s, src: SourceRows, deferred: o.DeferRows}
	s.shards = &Log{s: s, src: SourceShards}
	return s
}

// Ensure creates Table if needed.
func (s *Stream) Ensure(ctx context.Context) error {
	if err := s.o.Store.CreateTable(ctx, Spec); err != nil {
		return fmt.Errorf("explog: create %s: %w", Table, err)
	}
	return nil
}

// Retention is how long entries are kept.
func (s *Stream) Retention() time.Duration { return s.o.Retention }

// Rows is the appender of removed rows.
func (s *Stream) Rows() *Log { return s.rows }

// Shards is the appender of dropped shards.
func (s *Stream) Shards() *Log { return s.shards }

// Changed is closed by the next append through this process. Readers of
// another replica's appends poll instead.
func (s *Stream) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Stream) signal() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Log is the appender of one source.
type Log struct {
	s        *Stream
	src      string
	deferred bool // Options.DeferRows, for the rows source

	mu sync.Mutex
	// last is the sequence of the source's last entry; loaded says it was
	// read from the store, at lastAt (wall time of this process).
	last   int64
	loaded bool
	lastAt time.Time
	// pruned is the first hour not known to be removed.
	pruned int64
}

// remoteSettle is how long a reader of a remote backend leaves the
// newest entries alone: a batch of entries is not written atomically there
// (DynamoDB's BatchWriteItem, a CQL batch spread over partitions), so a
// reader could see an entry of a batch still being written before an
// earlier one of the same batch, and pass the earlier one. Batches take
// far less than this; the embedded backend writes each atomically and
// needs no delay.
const remoteSettle = 5 * time.Second

// reloadAfter is how long an appender trusts its own idea of the source's
// last sequence: the role that appends can move to another replica and
// back only after a lease period, far longer than this, so that the
// appender then reads what the other replica wrote.
const reloadAfter = 5 * time.Second

// seenSource is the partition prefix of the markers that say an
// expiration was logged (Append's once, Seen).
const seenSource = "seen"

// Append writes events, numbering them in order. It returns after they are
// durable; on error some may have been written, which a retry writes again
// (delivery is at least once). once, if not nil, holds an identity per
// event (expiry.Removed.ID) that Seen then reports as logged: the events
// are written before the markers, in one ordered log on a backend that has
// one (store.DeferredWriter), so that a marker never stands for an event
// that was lost.
func (l *Log) Append(ctx context.Context, events []Event, once []uint64) error {
	if len(events) == 0 {
		return nil
	}
	if once != nil && len(once) != len(events) {
		return store.Errorf(store.ErrInvalid, "explog: %d identities for %d events", len(once), len(events))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.s.o.Now()
	if !l.loaded || now.Sub(l.lastAt) > reloadAfter || now.Before(l.lastAt) {
		last, err := l.s.lastSeq(ctx, l.src, now)
		if err != nil {
			return err
		}
		l.last, l.loaded = max(l.last, last), true
	}
	l.lastAt = now
	seq := l.last
	st := l.s.o.Store
	write, mark := st.Write, st.Write
	if dw, ok := store.As[store.DeferredWriter](st); ok {
		if once != nil {
			// The markers' write below makes these durable too.
			write = dw.WriteDeferred
		}
		if l.deferred {
			// And the caller's synced write right after makes both
			// durable, in this order (see Options.DeferRows).
			write, mark = dw.WriteDeferred, dw.WriteDeferred
		}
	}
	var batch []store.Mutation
	hour := int64(-1)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := write(ctx, Table, batch); err != nil {
			return fmt.Errorf("explog: append to %s: %w", l.src, err)
		}
		batch = batch[:0]
		return nil
	}
	for _, ev := range events {
		seq = max(seq+1, ev.RemovedAt.UnixMicro())
		h := seq - seq%bucketUs
		if h != hour || len(batch) >= l.s.o.BatchSize {
			if err := flush(); err != nil {
				return err
			}
			hour = h
		}
		ev.Cursor = ""
		doc, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("explog: encode: %w", err)
		}
		batch = append(batch, store.Mutation{
			Partition: []any{l.src, h}, Clustering: []any{seq}, NoExpiry: true,
			Cells: []store.Cell{{Column: "ev", Value: doc}},
		})
	}
	if err := flush(); err != nil {
		return err
	}
	if once != nil {
		markers := make([]store.Mutation, len(events))
		for i := range events {
			markers[i] = store.Mutation{
				Partition: seenPartition(&events[i]), Clustering: []any{int64(once[i])}, NoExpiry: true,
				Cells: []store.Cell{{Column: "ev", Value: []byte{}}},
			}
		}
		for len(markers) > 0 {
			n := min(len(markers), l.s.o.BatchSize)
			if err := mark(ctx, Table, markers[:n]); err != nil {
				return fmt.Errorf("explog: mark %s as logged: %w", l.src, err)
			}
			markers = markers[n:]
		}
	}
	l.last = seq
	l.s.signal()
	return l.prune(ctx, now)
}

// seenPartition is where the marker of ev goes: the hour of its row's
// expiry, or of its shard's end, which every repetition of it shares.
func seenPartition(ev *Event) []any {
	at := ev.ExpiresAt
	if at.IsZero() {
		at = ev.To
	}
	return []any{seenSource, hourOf(at.UnixMicro())}
}

// Seen reports, for each event and its identity, whether Append already
// logged it with that identity (and its retention has not passed). The
// sweeper asks before logging a row again after a crash.
func (s *Stream) Seen(ctx context.Context, events []Event, once []uint64) ([]bool, error) {
	out := make([]bool, len(events))
	for i := range events {
		_, err := s.o.Store.Get(ctx, Table, seenPartition(&events[i]), []any{int64(once[i])})
		switch {
		case err == nil:
			out[i] = true
		case errors.Is(err, store.ErrNotFound):
		default:
			return nil, fmt.Errorf("explog: read markers: %w", err)
		}
	}
	return out, nil
}

// prune removes the source's partitions wholly older than the retention:
// nothing most of the time, one DeletePartition per hour once an hour.
func (l *Log) prune(ctx context.Context, now time.Time) error {
	end := hourOf(now.Add(-l.s.o.Retention).UnixMicro()) // first hour kept
	if l.pruned == 0 {
		// After a restart, look a bounded way back for hours left over.
		l.pruned = end - 48*bucketUs
	}
	for ; l.pruned < end; l.pruned += bucketUs {
		if err := l.s.o.Store.DeletePartition(ctx, Table, []any{l.src, l.pruned}); err != nil {
			return fmt.Errorf("explog: remove old entries: %w", err)
		}
		if err := l.s.o.Store.DeletePartition(ctx, Table, []any{seenSource, l.pruned}); err != nil {
			return fmt.Errorf("explog: remove old markers: %w", err)
		}
	}
	return nil
}

func hourOf(us int64) int64 { return us - ((us%bucketUs)+bucketUs)%bucketUs }

// lastSeq reads the source's last sequence: the newest entry of the
// newest hour that holds one, looking back over the retention.
func (s *Stream) lastSeq(ctx context.Context, src string, now time.Time) (int64, error) {
	top := hourOf(now.UnixMicro()) + bucketUs // a replica's clock may run ahead
	bottom := hourOf(now.Add(-s.o.Retention).UnixMicro())
	for h := top; h >= bottom; h -= bucketUs {
		p, err := kit.Query(ctx, s.o.Store, Table, store.Query{Partition: []any{src, h}, Reverse: true, Limit: 1})
		if err != nil {
			return 0, fmt.Errorf("explog: read the last entry of %s: %w", src, err)
		}
		if len(p.Rows) > 0 {
			seq, _ := p.Rows[0].Clustering[0].(int64)
			return seq, nil
		}
	}
	return 0, nil
}

// Cursor is a position in both sources: the last sequence read of each.
type Cursor struct{ Rows, Shards int64 }

// String encodes c as "ROWS-SHARDS".
func (c Cursor) String() string {
	return strconv.FormatInt(c.Rows, 10) + "-" + strconv.FormatInt(c.Shards, 10)
}

// ParseCursor decodes a cursor; "" is the start of the retained log.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	r, err1 := strconv.ParseInt(a, 10, 64)
	sh, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || r < 0 || sh < 0 {
		return Cursor{}, store.Errorf(store.ErrInvalid, "explog: malformed cursor %q; pass back the next or an event's cursor", s)
	}
	return Cursor{Rows: r, Shards: sh}, nil
}

// Page is what one Read returns.
type Page struct {
	// Events are the visible events after the cursor, in removal order.
	Events []Event
	// Next resumes after the last event read, visible or not.
	Next Cursor
}

// Read returns up to limit events after c, in removal order, keeping those
// visible accepts (nil keeps every one). Events it skips still advance the
// cursor, so that a reader scoped to few features does not read the
// others' events again.
func (s *Stream) Read(ctx context.Context, c Cursor, limit int, visible func(*Event) bool) (Page, error) {
	limit = min(max(limit, 1), store.MaxLimit)
	now := s.o.Now()
	rows, rpos, err := s.readSource(ctx, SourceRows, c.Rows, limit, now)
	if err != nil {
		return Page{}, err
	}
	shards, spos, err := s.readSource(ctx, SourceShards, c.Shards, limit, now)
	if err != nil {
		return Page{}, err
	}
	next := Cursor{Rows: rpos, Shards: spos}
	// Merge by sequence; when a source returned a full page, nothing of
	// the other past that page's end may be taken yet.
	var all []seqEvent
	i, j := 0, 0
	for len(all) < limit && (i < len(rows) || j < len(shards)) {
		if j >= len(shards) || (i < len(rows) && rows[i].seq <= shards[j].seq) {
			all = append(all, rows[i])
			next.Rows = rows[i].seq
			i++
		} else {
			all = append(all, shards[j])
			next.Shards = shards[j].seq
			j++
		}
	}
	if i < len(rows) || j < len(shards) {
		// The page is full: neither source advances past what it gave.
		if i > 0 {
			next.Rows = rows[i-1].seq
		} else {
			next.Rows = c.Rows
		}
		if j > 0 {
			next.Shards = shards[j-1].seq
		} else {
			next.Shards = c.Shards
		}
	}
	page := Page{Next: next, Events: []Event{}}
	// An event's own cursor resumes just after it: its source at its
	// sequence, the other at the position the merge had reached by then.
	cur := c
	for k := range all {
		if all[k].src == SourceRows {
			cur.Rows = all[k].seq
		} else {
			cur.Shards = all[k].seq
		}
		ev := &all[k].ev
		if visible != nil && !visible(ev) {
			continue
		}
		ev.Cursor = cur.String()
		page.Events = append(page.Events, *ev)
	}
	return page, nil
}

type seqEvent struct {
	src string
	seq int64
	ev  Event
}

// readSource reads up to limit entries of src after pos, and the position
// an empty read may move to: entries older than two hours before now are
// settled (every write of them has returned), so a reader that found none
// need not look at those hours again.
func (s *Stream) readSource(ctx context.Context, src string, pos int64, limit int, now time.Time) ([]seqEvent, int64, error) {
	nowUs := now.UnixMicro()
	start := max(hourOf(pos+1), hourOf(now.Add(-s.o.Retention).UnixMicro()))
	top := hourOf(nowUs) + bucketUs
	if s.settle > 0 {
		settled := nowUs - s.settle.Microseconds()
		if pos >= settled {
			return nil, pos, nil
		}
		top = hourOf(settled)
	}
	var out []seqEvent
	for h := start; h <= top && len(out) < limit; h += bucketUs {
		q := store.Query{
			Partition: []any{src, h},
			Low:       store.Bound{Values: []any{pos}, Inclusive: false},
			Limit:     limit - len(out),
		}
		if pos < h {
			q.Low = store.Bound{}
		}
		if s.settle > 0 {
			q.High = store.Bound{Values: []any{nowUs - s.settle.Microseconds()}, Inclusive: true}
		}
		p, err := kit.Query(ctx, s.o.Store, Table, q)
		if err != nil {
			return nil, pos, fmt.Errorf("explog: read %s: %w", src, err)
		}
		for _, r := range p.Rows {
			seq, _ := r.Clustering[0].(int64)
			doc, _ := r.Values[0].([]byte)
			var ev Event
			if err := json.Unmarshal(doc, &ev); err != nil {
				return nil, pos, store.Wrapf(store.ErrStorageFault, err, "explog: entry %s/%d", src, seq)
			}
			out = append(out, seqEvent{src: src, seq: seq, ev: ev})
		}
	}
	if len(out) == 0 {
		return nil, max(pos, hourOf(nowUs)-bucketUs-1), nil
	}
	return out, pos, nil
}

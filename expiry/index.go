package expiry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
)

// IndexTable is the table that holds the expiry index.
const IndexTable = "ebb_expiry"

// IndexSpec is the schema of IndexTable. The clustering key holds a hash
// of the row key rather than the key itself so that it stays small whatever
// the indexed table's keys are (two encoded keys of up to
// store.MaxKeyBytes each would not fit in one clustering key); the keys
// themselves are values.
var IndexSpec = store.TableSpec{
	Name: IndexTable,
	PartitionKey: []store.Column{
		{Name: "window", Type: store.TypeInt64}, // window start, Unix ms
		{Name: "shard", Type: store.TypeInt64},
	},
	Clustering: []store.Column{
		{Name: "due", Type: store.TypeTimestamp},
		{Name: "tbl", Type: store.TypeText},
		{Name: "id", Type: store.TypeBytes},
	},
	Values: []store.Column{
		{Name: "pk", Type: store.TypeBytes},
		{Name: "ck", Type: store.TypeBytes},
		{Name: "expires_at", Type: store.TypeTimestamp},
	},
}

// metaKind and metaKey locate the sweeper's durable state in
// store.MetaTable.
const (
	metaKind = "sweeper"
	metaKey  = "expiry"
)

// entry is one expiry index entry: the row (table, pk, ck) is due to be
// swept at due (Unix ms); its expiry is exp.
type entry struct {
	table  string
	pk, ck []byte
	exp    int64
	due    int64
	id     []byte
	window int64
	shard  int64
}

// idLen is the length of an entry id: 128 bits of SHA-256 make a collision
// between two rows of one table due in the same millisecond negligible.
const idLen = 16

// rowID identifies a row of a table. The same row always gets the same id,
// so re-indexing a row with an unchanged due time is an idempotent upsert.
// The encoded partition key is prefix-free, so pk||ck is unambiguous.
func rowID(table string, pk, ck []byte) []byte {
	h := sha256.New()
	h.Write([]byte(table))
	h.Write([]byte{0})
	h.Write(pk)
	h.Write(ck)
	return h.Sum(nil)[:idLen]
}

// layout places entries: windows are epoch-aligned, shards come from the
// row id so that one row always lands in the same shard.
type layout struct {
	windowMs int64
	shards   int64
}

func (l layout) windowOf(ms int64) int64 {
	w := ms / l.windowMs
	if ms < 0 && ms%l.windowMs != 0 {
		w--
	}
	return w * l.windowMs
}

func (l layout) place(e *entry) {
	e.window = l.windowOf(e.due)
	e.shard = int64(binary.BigEndian.Uint64(e.id[:8]) % uint64(l.shards))
}

func (e *entry) partition() []any { return []any{e.window, e.shard} }

func (e *entry) clustering() []any {
	return []any{time.UnixMilli(e.due).UTC(), e.table, e.id}
}

func (e *entry) upsert() store.Mutation {
	return store.Mutation{
		Partition:  e.partition(),
		Clustering: e.clustering(),
		NoExpiry:   true,
		Cells: []store.Cell{
			{Column: "pk", Value: e.pk},
			{Column: "ck", Value: e.ck},
			{Column: "expires_at", Value: time.UnixMilli(e.exp).UTC()},
		},
	}
}

func (e *entry) deletion() store.Mutation {
	return store.Mutation{Kind: store.DeleteRow, Partition: e.partition(), Clustering: e.clustering()}
}

// errBadEntry marks an index row that no decorator wrote.
var errBadEntry = errors.New("expiry: malformed index entry")

// entryFromRow decodes an index row read from partition (window, shard).
func entryFromRow(window, shard int64, r store.Row) (entry, error) {
	due, ok1 := r.Clustering[0].(time.Time)
	table, ok2 := r.Clustering[1].(string)
	id, ok3 := r.Clustering[2].([]byte)
	pk, ok4 := r.Values[0].([]byte)
	ck, ok5 := r.Values[1].([]byte)
	exp, ok6 := r.Values[2].(time.Time)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return entry{}, errBadEntry
	}
	return entry{
		table: table, pk: pk, ck: ck, exp: exp.UnixMilli(), due: due.UnixMilli(),
		id: id, window: window, shard: shard,
	}, nil
}

// state is the sweeper's durable state. The layout is recorded with the
// watermark because entries written under one layout cannot be found under
// another.
type state struct {
	WindowMs int64 `json:"window_ms"`
	Shards   int64 `json:"shards"`
	// WatermarkMs is the start of the first window not yet completely
	// swept: every entry in an earlier window has been processed.
	// It is saved only by an index without due markers: with markers the
	// sweeper needs no watermark, and an idle one writes nothing.
	WatermarkMs int64 `json:"watermark_ms"`
	// Marked: writers record a due marker per window (marks.go), so the
	// sweeper reads only the windows named there. Set when the state is
	// created; an index created without markers keeps walking every
	// window, since its entries have none.
	Marked bool `json:"marked,omitempty"`
}

// ErrLayout is returned by Wrap when the index was created with another
// Window or Shards. It wraps store.ErrConflict.
var ErrLayout = store.Errorf(store.ErrConflict, "expiry index layout differs")

func loadState(ctx context.Context, m store.Meta) (state, bool, error) {
	doc, err := m.Get(ctx, metaKind, metaKey)
	if errors.Is(err, store.ErrNotFound) {
		return state{}, false, nil
	}
	if err != nil {
		return state{}, false, fmt.Errorf("expiry: read watermark: %w", err)
	}
	var s state
	if err := json.Unmarshal(doc, &s); err != nil || s.WindowMs <= 0 || s.Shards <= 0 {
		return state{}, false, fmt.Errorf("expiry: corrupt watermark document %q", doc)
	}
	return s, true, nil
}

func saveState(ctx context.Context, m store.Meta, s state) error {
	doc, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := m.Put(ctx, metaKind, metaKey, doc); err != nil {
		return fmt.Errorf("expiry: save watermark: %w", err)
	}
	return nil
}

// setup creates IndexTable and, on first use, the sweeper state with the
// watermark at the window containing now. No entry can be due earlier than
// that: due is never before the write's start.
func setup(ctx context.Context, inner store.Store, l layout, now time.Time) (state, error) {
	m := store.Meta{S: inner}
	if err := m.Ensure(ctx); err != nil {
		return state{}, fmt.Errorf("expiry: create %s: %w", store.MetaTable, err)
	}
	if err := inner.CreateTable(ctx, IndexSpec); err != nil {
		return state{}, fmt.Errorf("expiry: create %s: %w", IndexTable, err)
	}
	s, ok, err := loadState(ctx, m)
	if err != nil {
		return state{}, err
	}
	if ok {
		if s.WindowMs != l.windowMs || s.Shards != l.shards {
			return state{}, fmt.Errorf("%w: the index has window %s and %d shards, options ask for %s and %d",
				ErrLayout, time.Duration(s.WindowMs)*time.Millisecond, s.Shards,
				time.Duration(l.windowMs)*time.Millisecond, l.shards)
		}
		return s, nil
	}
	s = state{WindowMs: l.windowMs, Shards: l.shards, WatermarkMs: l.windowOf(now.UnixMilli()), Marked: true}
	return s, saveState(ctx, m, s)
}

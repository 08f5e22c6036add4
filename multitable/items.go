package multitable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// Item is one item of a logical table.
type Item struct {
	Key       string
	Timestamp time.Time
	// Attributes is a compact JSON object.
	Attributes json.RawMessage
	// ExpiresAt is zero when the item never expires.
	ExpiresAt time.Time
}

// PutItem is what Put writes.
type PutItem struct {
	Key       string
	Timestamp time.Time
	// Attributes must be a JSON object; nil or null is the empty object.
	Attributes json.RawMessage
	// TTL, when set, overrides the table's default TTL; zero means the
	// item never expires. The item expires TTL after the write.
	TTL *time.Duration
}

// itemSize is what an item costs in bytes, for usage reports: key,
// attributes and timestamp.
func itemSize(key string, attrs []byte) int64 { return int64(len(key) + len(attrs) + 8) }

// Put creates or replaces an item and returns it as stored. Bad input
// (ErrInvalid, ErrTooLarge) writes nothing; a missing table is ErrNoTable.
func (g *Registry) Put(ctx context.Context, table string, in PutItem) (Item, error) {
	if err := CheckName(table); err != nil {
		return Item{}, err
	}
	if err := CheckKey(in.Key); err != nil {
		return Item{}, err
	}
	if err := checkTimestamp(in.Timestamp); err != nil {
		return Item{}, err
	}
	if in.TTL != nil {
		if err := checkTTL("ttl", *in.TTL); err != nil {
			return Item{}, err
		}
	}
	attrs, err := compactAttributes(in.Attributes)
	if err != nil {
		return Item{}, err
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return Item{}, err
	}
	t := rec.ref(table)
	ttl := time.Duration(rec.DefaultTTLMs) * time.Millisecond
	if in.TTL != nil {
		ttl = *in.TTL
	}
	ts := time.UnixMilli(in.Timestamp.UnixMilli()).UTC()
	var expMs int64
	if ttl > 0 {
		expMs = g.now().Add(ttl).UnixMilli()
	}
	e := entry{ts: ts, key: in.Key, expMs: expMs, size: itemSize(in.Key, attrs)}
	for attempt := range maxAttempts {
		cur, err := g.readItem(ctx, t, in.Key)
		if err != nil {
			return Item{}, err
		}
		e.ver, e.written = newVersion(), g.now()
		item := withExpiry(store.Mutation{
			Partition:  t.itemPartition(in.Key),
			Clustering: itemClustering(in.Key),
			Cells: []store.Cell{
				{Column: colAt, Value: ts},
				{Column: colAttrs, Value: attrs},
				{Column: colVer, Value: e.ver},
			},
			If:     cur.guard(),
			Expiry: t.expiry,
		}, expMs)
		var applied bool
		if g.guarded {
			applied, err = g.writeWithEntry(ctx, t, item, e)
		} else {
			applied, err = g.writeAfterEntry(ctx, t, item, e)
		}
		if err != nil {
			return Item{}, fmt.Errorf("put %s/%s: %w", table, clip(in.Key), err)
		}
		if !applied {
			// Another writer replaced the item since it was read: this
			// attempt's entry, if it was written, lists nothing, and the
			// put starts over.
			g.metrics.conflicts.Inc()
			if !g.guarded {
				g.dropEntry(ctx, t, e)
			}
			if err := g.pause(ctx, attempt); err != nil {
				return Item{}, err
			}
			continue
		}
		if cur.ok {
			// The replaced item's own entry now lists nothing.
			g.dropEntry(ctx, t, entry{ts: cur.item.Timestamp, key: in.Key, ver: cur.ver})
		}
		g.metrics.ops.WithLabelValues("put").Inc()
		out := Item{Key: in.Key, Timestamp: ts, Attributes: attrs}
		if expMs != 0 {
			out.ExpiresAt = time.UnixMilli(expMs).UTC()
		}
		return out, nil
	}
	return Item{}, store.Errorf(store.ErrUnavailable, "put %s/%s: the item kept changing under concurrent writes; retry", table, clip(in.Key))
}

// Get returns a live item, ErrNoItem, or ErrNoTable.
func (g *Registry) Get(ctx context.Context, table, key string) (Item, error) {
	if err := CheckName(table); err != nil {
		return Item{}, err
	}
	if err := CheckKey(key); err != nil {
		return Item{}, err
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return Item{}, err
	}
	r, err := g.readItem(ctx, rec.ref(table), key)
	if err != nil {
		return Item{}, err
	}
	g.metrics.ops.WithLabelValues("get").Inc()
	if !r.ok {
		return Item{}, store.Errorf(ErrNoItem, "%s/%s", table, clip(key))
	}
	return r.item, nil
}

// Delete deletes an item. Deleting a missing item is not an error; a
// missing table is ErrNoTable.
func (g *Registry) Delete(ctx context.Context, table, key string) error {
	if err := CheckName(table); err != nil {
		return err
	}
	if err := CheckKey(key); err != nil {
		return err
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return err
	}
	t := rec.ref(table)
	for attempt := range maxAttempts {
		cur, err := g.readItem(ctx, t, key)
		if err != nil || !cur.ok {
			return err
		}
		// The delete is guarded like a put, so that it never removes a
		// row it did not read: a fence a listing wrote meanwhile stays.
		del := store.Mutation{Kind: store.DeleteRow, Partition: t.itemPartition(key), Clustering: itemClustering(key), If: cur.guard()}
		err = g.st.Write(ctx, ItemsTable, []store.Mutation{del})
		if errors.Is(err, store.ErrConflict) {
			now, rerr := g.readItem(ctx, t, key)
			if rerr != nil {
				return fmt.Errorf("delete %s/%s: %w", table, clip(key), rerr)
			}
			if now.ok {
				g.metrics.conflicts.Inc()
				if err := g.pause(ctx, attempt); err != nil {
					return err
				}
				continue
			}
			// Gone either way: deleted by this call (a retried request
			// refused after it applied) or by another.
			err = nil
		}
		if err != nil {
			return fmt.Errorf("delete %s/%s: %w", table, clip(key), err)
		}
		// The item went first: an entry without an item is garbage that
		// listings skip, an item without an entry would be missed.
		g.dropEntry(ctx, t, entry{ts: cur.item.Timestamp, key: key, ver: cur.ver})
		g.metrics.ops.WithLabelValues("delete").Inc()
		return nil
	}
	return store.Errorf(store.ErrUnavailable, "delete %s/%s: the item kept changing under concurrent writes; retry", table, clip(key))
}

// maxAttempts bounds the attempts of a put or delete that lose the race
// for an item to other writers of the same key. Only sustained contention
// on one key exhausts them; the caller's retry then settles it.
const maxAttempts = 8

// contention is the backoff of a put or delete that lost a race: a random
// delay up to 2^attempt ms (at most 128 ms) before attempt+1, so that
// writers of one key stop colliding.
var contention = backoff.Policy{Base: time.Millisecond, Max: 128 * time.Millisecond, Jitter: backoff.Full}

// pause waits before attempt+1 (attempt counts from 0) of a put or delete
// that lost a race.
func (g *Registry) pause(ctx context.Context, attempt int) error {
	return contention.Wait(ctx, attempt+1)
}

// itemRow is an item row as read: the item, if it is one, and the version
// that conditional writes compare.
type itemRow struct {
	item Item
	// ok: the row holds a live item.
	ok bool
	// live: the row has live content, an item or a fence.
	live bool
	// ver is the version of the row's last write; 0 for an item written
	// before items carried versions.
	ver int64
}

// guard is the condition under which a write replaces exactly the row
// that was read: the same version, or still no row at all.
func (r itemRow) guard() *store.Condition {
	switch {
	case !r.live:
		return &store.Condition{Kind: store.IfAbsent}
	case r.ver != 0:
		return &store.Condition{Kind: store.IfEquals, Column: colVer, Value: r.ver}
	default:
		// An item from before versions: its timestamp is the best
		// witness it has. Listings never fence such an item (see
		// lister.retire), so the weaker guard is enough.
		return &store.Condition{Kind: store.IfEquals, Column: colAt, Value: r.item.Timestamp}
	}
}

// newVersion returns a fresh item version: random, so that writers on
// different replicas need no coordination, and never 0.
func newVersion() int64 { return rand.Int64N(math.MaxInt64) + 1 }

// readItem reads an item row.
func (g *Registry) readItem(ctx context.Context, t tableRef, key string) (itemRow, error) {
	row, err := g.st.Get(ctx, ItemsTable, t.itemPartition(key), itemClustering(key))
	if errors.Is(err, store.ErrNotFound) {
		return itemRow{}, nil
	}
	if err != nil {
		return itemRow{}, fmt.Errorf("read %s/%s: %w", t.name, clip(key), err)
	}
	r := itemRow{live: true}
	r.ver, _ = row.Values[2].(int64)
	ts, ok1 := row.Values[0].(time.Time)
	attrs, ok2 := row.Values[1].([]byte)
	if ok1 && ok2 {
		// Cells and marker share one expiry, so a row lacking either is
		// a fence, not an item anyone can read.
		r.ok = true
		r.item = Item{Key: key, Timestamp: ts, Attributes: attrs, ExpiresAt: row.ExpiresAt}
	}
	return r, nil
}

// writeAfterEntry writes e (and its bucket row) and then the guarded item
// write m that lists through it, and reports whether m applied. The entry
// is this attempt's own row: no other writer ever touches it.
func (g *Registry) writeAfterEntry(ctx context.Context, t tableRef, m store.Mutation, e entry) (bool, error) {
	if err := g.addEntry(ctx, t, e); err != nil {
		return false, err
	}
	return g.writeGuarded(ctx, t, e.key, []store.Mutation{m}, e.ver)
}

// writeWithEntry is writeAfterEntry on a store that applies a guarded
// batch whole or not at all: the entry (and its bucket row, unless this
// process wrote it already) and the item go in one batch, one write
// instead of two, and a refused attempt leaves no entry behind. The
// bucket row of an entry without expiry is then checked as addEntry
// checks it.
func (g *Registry) writeWithEntry(ctx context.Context, t tableRef, m store.Mutation, e entry) (bool, error) {
	br := t.bucketRowOf(e)
	muts := make([]store.Mutation, 0, 3)
	cached := g.buckets.has(t, br)
	if !cached {
		muts = append(muts, t.bucketUpsert(br))
	}
	muts = append(muts, t.entryUpsert(e), m)
	applied, err := g.writeGuarded(ctx, t, e.key, muts, e.ver)
	if err != nil || !applied {
		return applied, err
	}
	if !cached {
		g.buckets.add(t, br)
	}
	return true, g.checkBucket(ctx, t, e, br)
}

// writeGuarded applies a batch whose one guarded write is of an item row
// that sets version ver, and reports whether it applied. A refused
// condition is not always a lost race: a request retried after it applied
// is refused by its own write, so a refusal is settled by reading the
// version back.
func (g *Registry) writeGuarded(ctx context.Context, t tableRef, key string, muts []store.Mutation, ver int64) (bool, error) {
	err := g.st.Write(ctx, ItemsTable, muts)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, store.ErrConflict) {
		return false, err
	}
	now, err := g.readItem(ctx, t, key)
	if err != nil {
		return false, err
	}
	return now.ver == ver, nil
}

// dropEntry removes an entry that lists nothing: its item was replaced,
// deleted or never written. The entry is the row of one write attempt, so
// no other writer can need it. On a backend with one ordered log it rides
// the next sync; if it is lost, or fails, it stays as garbage that
// listings skip and clean up, so failures are only logged.
func (g *Registry) dropEntry(ctx context.Context, t tableRef, e entry) {
	if err := g.writeDeferred(ctx, []store.Mutation{t.entryDelete(e)}); err != nil {
		g.log.Warn("could not remove a listing entry that lists nothing; listings will", "table", t.name, "err", err)
	}
}

// writeDeferred writes a listing row that only has to be durable once the
// item write that follows it is: on a backend with one ordered log
// (store.DeferredWriter) it rides that write's sync.
func (g *Registry) writeDeferred(ctx context.Context, muts []store.Mutation) error {
	if dw, ok := store.As[store.DeferredWriter](g.st); ok {
		return dw.WriteDeferred(ctx, ItemsTable, muts)
	}
	return g.st.Write(ctx, ItemsTable, muts)
}

// addEntry writes an entry and, unless this process wrote it already, the
// bucket row announcing it, ahead of the item write that follows. An entry
// without expiry is then checked: its bucket row may be removed by a
// listing that found the bucket empty just before the entry landed.
func (g *Registry) addEntry(ctx context.Context, t tableRef, e entry) error {
	br := t.bucketRowOf(e)
	muts := make([]store.Mutation, 0, 2)
	cached := g.buckets.has(t, br)
	if !cached {
		muts = append(muts, t.bucketUpsert(br))
	}
	muts = append(muts, t.entryUpsert(e))
	if err := g.writeDeferred(ctx, muts); err != nil {
		return fmt.Errorf("list %s/%s: %w", t.name, clip(e.key), err)
	}
	if !cached {
		g.buckets.add(t, br)
	}
	return g.checkBucket(ctx, t, e, br)
}

// checkBucket checks, after the entry e is written, that the bucket row br
// announcing it is still there, and writes it again if not: a listing
// that found the bucket empty just before the entry landed may have
// removed it. Bucket rows with an expiry are never removed before it.
func (g *Registry) checkBucket(ctx context.Context, t tableRef, e entry, br bucketRow) error {
	if br.granule != noExpiry {
		return nil
	}
	_, err := g.st.Get(ctx, ItemsTable, t.bucketPartition(), t.bucketClustering(br))
	if errors.Is(err, store.ErrNotFound) {
		g.metrics.repairs.WithLabelValues("bucket").Inc()
		err = g.st.Write(ctx, ItemsTable, []store.Mutation{t.bucketUpsert(br)})
	}
	if err != nil {
		return fmt.Errorf("list %s/%s: bucket: %w", t.name, clip(e.key), err)
	}
	return nil
}

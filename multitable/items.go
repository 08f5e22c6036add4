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
	// Version identifies the item's last write: an opaque token that
	// changes with every write, which PutItem.IfVersion, PatchItem.IfVersion
	// and DeleteIf compare.
	Version string
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
	// IfAbsent makes the put create only: it fails with ErrPrecondition
	// when the key holds a live item.
	IfAbsent bool
	// IfVersion, when set, makes the put compare and set: it fails with
	// ErrPrecondition unless the key holds a live item of this Version
	// ("*": of any version).
	IfVersion string
}

// itemSize is what an item costs in bytes, for usage reports: key,
// attributes and timestamp.
func itemSize(key string, attrs []byte) int64 { return int64(len(key) + len(attrs) + 8) }

// Put creates or replaces an item and returns it as stored. Bad input
// (ErrInvalid, ErrTooLarge) writes nothing; a missing table is ErrNoTable;
// a precondition (PutItem.IfAbsent, PutItem.IfVersion) that does not hold
// is ErrPrecondition and writes nothing.
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
	if err := checkPrecondition(in.IfAbsent, in.IfVersion); err != nil {
		return Item{}, err
	}
	attrs, err := compactAttributes(in.Attributes)
	if err != nil {
		return Item{}, err
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return Item{}, err
	}
	ttl := time.Duration(rec.DefaultTTLMs) * time.Millisecond
	if in.TTL != nil {
		ttl = *in.TTL
	}
	ts := time.UnixMilli(in.Timestamp.UnixMilli()).UTC()
	var expMs int64
	if ttl > 0 {
		expMs = g.now().Add(ttl).UnixMilli()
	}
	return g.writeItem(ctx, rec.ref(table), in.Key, "put", func(cur itemRow) (itemWrite, error) {
		if err := cur.holds(table, in.Key, in.IfAbsent, in.IfVersion); err != nil {
			return itemWrite{}, err
		}
		return itemWrite{ts: ts, attrs: attrs, expMs: expMs, src: sourceOfPut(in.TTL)}, nil
	})
}

// itemWrite is what one attempt of writeItem writes: the item's
// timestamp, compact attributes and expiry (Unix milliseconds, 0 = none).
type itemWrite struct {
	ts    time.Time
	attrs []byte
	expMs int64
	// src says where expMs came from, recorded in the item's version.
	src ttlSource
	// written, when set, is the write time its listing entry records in
	// place of now: a rewrite keeps the time the expiry counts from.
	written time.Time
}

// writeItem writes an item over whatever the key holds: it reads the
// item row, asks next what to write over it (an error there ends the
// write with nothing written), and writes that guarded by the row it
// read, starting over when another writer changed the row meanwhile. So
// every decision next makes, a precondition or a merge, holds atomically
// against every writer. op names the operation in metrics and errors.
func (g *Registry) writeItem(ctx context.Context, t tableRef, key, op string, next func(cur itemRow) (itemWrite, error)) (Item, error) {
	for attempt := range maxAttempts {
		cur, err := g.readItem(ctx, t, key)
		if err != nil {
			return Item{}, err
		}
		w, err := next(cur)
		if err != nil {
			return Item{}, err
		}
		e := entry{ts: w.ts, key: key, expMs: w.expMs, size: itemSize(key, w.attrs)}
		e.ver, e.written = newVersion(w.src), g.now()
		if !w.written.IsZero() {
			e.written = w.written
		}
		item := withExpiry(store.Mutation{
			Partition:  t.itemPartition(key),
			Clustering: itemClustering(key),
			Cells: []store.Cell{
				{Column: colAt, Value: w.ts},
				{Column: colAttrs, Value: w.attrs},
				{Column: colVer, Value: e.ver},
			},
			If:     cur.guard(),
			Expiry: t.expiry,
		}, w.expMs)
		var applied bool
		if g.guarded {
			applied, err = g.writeWithEntry(ctx, t, item, e)
		} else {
			applied, err = g.writeAfterEntry(ctx, t, item, e)
		}
		if err != nil {
			return Item{}, fmt.Errorf("%s %s/%s: %w", op, t.name, clip(key), err)
		}
		if !applied {
			// Another writer replaced the item since it was read: this
			// attempt's entry, if it was written, lists nothing, and the
			// write starts over.
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
			g.dropEntry(ctx, t, entry{ts: cur.item.Timestamp, key: key, ver: cur.ver})
		}
		g.metrics.ops.WithLabelValues(op).Inc()
		out := Item{Key: key, Timestamp: w.ts, Attributes: w.attrs, Version: versionOf(e.ver, w.ts)}
		if w.expMs != 0 {
			out.ExpiresAt = time.UnixMilli(w.expMs).UTC()
		}
		return out, nil
	}
	return Item{}, store.Errorf(store.ErrUnavailable, "%s %s/%s: the item kept changing under concurrent writes; retry", op, t.name, clip(key))
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
	return g.DeleteIf(ctx, table, key, "")
}

// DeleteIf deletes an item if it holds version (an Item.Version; "*": any
// live item), else fails with ErrPrecondition and deletes nothing. An
// empty version deletes unconditionally, as Delete.
func (g *Registry) DeleteIf(ctx context.Context, table, key, version string) error {
	if err := CheckName(table); err != nil {
		return err
	}
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := checkPrecondition(false, version); err != nil {
		return err
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return err
	}
	t := rec.ref(table)
	for attempt := range maxAttempts {
		cur, err := g.readItem(ctx, t, key)
		if err != nil {
			return err
		}
		if err := cur.holds(table, key, false, version); err != nil {
			return err
		}
		if !cur.ok {
			return nil
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

// ttlSource is where an item's expiry came from: the item's own ttl or
// the table's default_ttl, so that a rewrite of the table's items to a new
// default (see RunRewrites) changes only the items that followed the
// default. Items written before versions recorded it are srcUnknown.
type ttlSource uint8

const (
	srcUnknown ttlSource = iota
	srcOwn
	srcDefault
)

// sourceOfPut is the source of a put's expiry: its own ttl when it gives
// one, else the table's default.
func sourceOfPut(ttl *time.Duration) ttlSource {
	if ttl != nil {
		return srcOwn
	}
	return srcDefault
}

// newVersion returns a fresh item version: random, so that writers on
// different replicas need no coordination, and never 0. It also records
// src, at no cost in bytes: versions written before sources were
// recorded are positive, so a recorded source makes the version negative,
// odd for srcDefault and even for srcOwn; srcUnknown keeps it positive.
func newVersion(src ttlSource) int64 {
	switch src {
	case srcOwn:
		return -2 * (rand.Int64N(math.MaxInt64/2) + 1)
	case srcDefault:
		return -2*rand.Int64N(math.MaxInt64/2) - 1
	}
	return rand.Int64N(math.MaxInt64) + 1
}

// sourceOf returns the source a version records.
func sourceOf(ver int64) ttlSource {
	switch {
	case ver >= 0:
		return srcUnknown
	case ver%2 == 0:
		return srcOwn
	}
	return srcDefault
}

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
		r.item = Item{Key: key, Timestamp: ts, Attributes: attrs, ExpiresAt: row.ExpiresAt, Version: versionOf(r.ver, ts)}
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

package multitable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	old, hadOld, err := g.readItem(ctx, t, in.Key)
	if err != nil {
		return Item{}, err
	}
	// The entry (and its bucket row) land before the item, so that a live
	// item is always listed. The entry never expires before the item it
	// may already list: should this put fail before its item write, the
	// old item stays listed for as long as it lives.
	e := entry{ts: ts, key: in.Key, expMs: expMs, size: itemSize(in.Key, attrs)}
	if hadOld && old.Timestamp.Equal(ts) && !covers(expMs, expMsOf(old.ExpiresAt)) {
		e.expMs = expMsOf(old.ExpiresAt)
	}
	if err := g.addEntry(ctx, t, e); err != nil {
		return Item{}, err
	}
	item := withExpiry(store.Mutation{
		Partition:  t.itemPartition(in.Key),
		Clustering: itemClustering(in.Key),
		Cells: []store.Cell{
			{Column: colAt, Value: ts},
			{Column: colAttrs, Value: attrs},
		},
	}, expMs)
	if err := g.st.Write(ctx, ItemsTable, []store.Mutation{item}); err != nil {
		return Item{}, fmt.Errorf("put %s/%s: %w", table, clip(in.Key), err)
	}
	// A concurrent writer or remover of the same key may have removed or
	// shortened the entry since it was written.
	if err := g.settleEntry(ctx, t, in.Key, ts); err != nil {
		return Item{}, err
	}
	if hadOld && !old.Timestamp.Equal(ts) {
		if err := g.removeEntry(ctx, t, entry{ts: old.Timestamp, key: in.Key}); err != nil {
			// The item is written and listed; the old entry is garbage
			// that listings skip and clean up.
			g.log.Warn("could not remove a moved item's old listing entry", "table", table, "err", err)
		}
	}
	g.metrics.ops.WithLabelValues("put").Inc()
	out := Item{Key: in.Key, Timestamp: ts, Attributes: attrs}
	if expMs != 0 {
		out.ExpiresAt = time.UnixMilli(expMs).UTC()
	}
	return out, nil
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
	it, ok, err := g.readItem(ctx, rec.ref(table), key)
	if err != nil {
		return Item{}, err
	}
	g.metrics.ops.WithLabelValues("get").Inc()
	if !ok {
		return Item{}, fmt.Errorf("%w: %s/%s", ErrNoItem, table, clip(key))
	}
	return it, nil
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
	old, ok, err := g.readItem(ctx, t, key)
	if err != nil || !ok {
		return err
	}
	// The item goes before its entry: an entry without an item is skipped
	// by listings, an item without an entry would be missed.
	del := store.Mutation{Kind: store.DeleteRow, Partition: t.itemPartition(key), Clustering: itemClustering(key)}
	if err := g.st.Write(ctx, ItemsTable, []store.Mutation{del}); err != nil {
		return fmt.Errorf("delete %s/%s: %w", table, clip(key), err)
	}
	if err := g.removeEntry(ctx, t, entry{ts: old.Timestamp, key: key}); err != nil {
		g.log.Warn("could not remove a deleted item's listing entry", "table", table, "err", err)
	}
	g.metrics.ops.WithLabelValues("delete").Inc()
	return nil
}

// readItem reads an item row; ok is false when it is missing or expired.
func (g *Registry) readItem(ctx context.Context, t tableRef, key string) (Item, bool, error) {
	row, err := g.st.Get(ctx, ItemsTable, t.itemPartition(key), itemClustering(key))
	if errors.Is(err, store.ErrNotFound) {
		return Item{}, false, nil
	}
	if err != nil {
		return Item{}, false, fmt.Errorf("read %s/%s: %w", t.name, clip(key), err)
	}
	ts, ok1 := row.Values[0].(time.Time)
	attrs, ok2 := row.Values[1].([]byte)
	if !ok1 || !ok2 {
		// Cells and marker share one expiry, so this is a row no put
		// wrote whole: not an item anyone can read.
		return Item{}, false, nil
	}
	return Item{Key: key, Timestamp: ts, Attributes: attrs, ExpiresAt: row.ExpiresAt}, true, nil
}

// addEntry writes an entry and, unless this process wrote it already, the
// bucket row announcing it. An entry without expiry is then checked: its
// bucket row may be removed by a listing that found the bucket empty just
// before the entry landed.
func (g *Registry) addEntry(ctx context.Context, t tableRef, e entry) error {
	br := t.bucketRowOf(e)
	muts := make([]store.Mutation, 0, 2)
	cached := g.buckets.has(t, br)
	if !cached {
		muts = append(muts, t.bucketUpsert(br))
	}
	muts = append(muts, t.entryUpsert(e))
	if err := g.st.Write(ctx, ItemsTable, muts); err != nil {
		return fmt.Errorf("list %s/%s: %w", t.name, clip(e.key), err)
	}
	if !cached {
		g.buckets.add(t, br)
	}
	if br.granule != noExpiry {
		// Bucket rows with an expiry are never removed before it.
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

// covers reports whether an expiry a (Unix milliseconds, 0 = never) is no
// earlier than b.
func covers(a, b int64) bool { return a == 0 || (b != 0 && a >= b) }

// maxSettleRounds bounds settleEntry's rounds. Each round that writes was
// raced by another writer of the same key; only sustained contention on
// one key exhausts them, and the caller's retry settles it.
const maxSettleRounds = 8

// settleEntry makes the listing agree with the item key currently holds,
// if that item has timestamp ts: its entry must exist and expire no
// earlier than the item. It runs after every write that may have broken
// that (an item write, an entry removal) and repeats until a check needs
// no write, so that either this call or the concurrent writer's own
// settleEntry sees the final state.
func (g *Registry) settleEntry(ctx context.Context, t tableRef, key string, ts time.Time) error {
	for range maxSettleRounds {
		cur, ok, err := g.readItem(ctx, t, key)
		if err != nil || !ok || !cur.Timestamp.Equal(ts) {
			return err
		}
		want := entry{ts: ts, key: key, expMs: expMsOf(cur.ExpiresAt), size: itemSize(key, cur.Attributes)}
		row, err := g.st.Get(ctx, ItemsTable, t.entryPartition(t.bucketOf(ts.UnixMilli())), entryClustering(ts, key))
		if err == nil && covers(expMsOf(row.ExpiresAt), want.expMs) {
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("verify %s/%s: %w", t.name, clip(key), err)
		}
		g.metrics.repairs.WithLabelValues("entry").Inc()
		g.log.Debug("listing entry removed or shortened concurrently; restoring it", "table", t.name)
		if err := g.addEntry(ctx, t, want); err != nil {
			return err
		}
	}
	return fmt.Errorf("list %s/%s: the item kept changing under concurrent writes; retry: %w", t.name, clip(key), store.ErrUnavailable)
}

// removeEntry deletes an entry that no longer matches its item, then
// settles the item's entry: if a concurrent write has meanwhile given the
// item that very timestamp, the entry is restored.
func (g *Registry) removeEntry(ctx context.Context, t tableRef, e entry) error {
	if err := g.st.Write(ctx, ItemsTable, []store.Mutation{t.entryDelete(e)}); err != nil {
		return err
	}
	return g.settleEntry(ctx, t, e.key, e.ts)
}

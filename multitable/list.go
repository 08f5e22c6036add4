package multitable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/internal/parallel"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// ListQuery selects a page of a logical table's items.
type ListQuery struct {
	// After, when set, selects items whose timestamp is strictly after it;
	// nil selects every item.
	After *time.Time
	// Limit is the page size, 1..store.MaxLimit; zero means
	// store.DefaultLimit, as it does for the HTTP API.
	Limit int
	// PageToken resumes after the last item of a previous page of the same
	// table; empty starts at the beginning.
	PageToken string
	// MaxBytes, when positive, ends the page early, with a next page
	// token, once the keys and attribute documents of its items add up to
	// at least MaxBytes. A page always holds at least one item when one
	// is in range, so it may exceed MaxBytes by at most one item. Zero
	// bounds the page by Limit alone.
	MaxBytes int
}

// ListPage is a page of items ordered by (timestamp, key bytewise).
type ListPage struct {
	Items []Item
	// NextPageToken is empty when no item follows the page.
	NextPageToken string
}

// bucketDirPage is how many bucket rows a listing reads at a time.
const bucketDirPage = 64

// errStop ends a walk early without error.
var errStop = errors.New("stop")

// walkBuckets calls fn once for each bucket of t in the directory, in time
// order, from the bucket starting at or before from (nil: the first), with
// the live bucket rows that announce it (rows of one bucket are adjacent
// in the directory). fn returning errStop ends the walk without error.
func walkBuckets(ctx context.Context, st store.Store, t tableRef, from *int64, fn func(b int64, rows []bucketRow) error) error {
	q := store.Query{Partition: t.bucketPartition(), Limit: bucketDirPage}
	if from != nil {
		q.Low = store.Bound{Values: []any{t.bucketStart(*from)}, Inclusive: true}
	}
	var cur []bucketRow
	for {
		page, err := kit.Query(ctx, st, ItemsTable, q)
		if errors.Is(err, store.ErrTableNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read buckets of %s: %w", t.name, err)
		}
		for _, row := range page.Rows {
			start, _ := row.Clustering[0].(time.Time)
			granule, _ := row.Clustering[2].(int64)
			br := bucketRow{bucket: t.bucketOf(start.UnixMilli()), granule: granule}
			if len(cur) > 0 && cur[0].bucket != br.bucket {
				if err := fn(cur[0].bucket, cur); err != nil {
					return stopOK(err)
				}
				cur = nil
			}
			cur = append(cur, br)
		}
		if page.NextPageToken == nil {
			break
		}
		q.PageToken = page.NextPageToken
	}
	if len(cur) > 0 {
		return stopOK(fn(cur[0].bucket, cur))
	}
	return nil
}

func stopOK(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// maxItemBytes is the most data one item holds, as ListQuery.MaxBytes
// counts it: its attribute document and its key.
const maxItemBytes = MaxAttributesBytes + MaxKeyBytes

// List returns a page of a table's items in (timestamp, key) order, of
// lq.Limit items or, when set, lq.MaxBytes.
//
// A listing materializes its page, so a page bounded by MaxBytes is read
// in chunks, each of as many items as the bytes left under the bound could
// hold at their largest, plus one: however large the items, no chunk takes
// the page more than one item past the bound. Each chunk resumes from the
// previous one's token, so the page's token is the listing's own.
func (g *Registry) List(ctx context.Context, table string, lq ListQuery) (ListPage, error) {
	page, err := g.list(ctx, table, lq)
	if err != nil {
		return ListPage{}, err
	}
	g.metrics.ops.WithLabelValues("list").Inc()
	return page, nil
}

func (g *Registry) list(ctx context.Context, table string, lq ListQuery) (ListPage, error) {
	if lq.Limit == 0 {
		lq.Limit = store.DefaultLimit
	}
	if lq.MaxBytes <= 0 {
		return g.listChunk(ctx, table, lq)
	}
	out := ListPage{Items: []Item{}}
	left, size := lq.Limit, 0
	for {
		lq.Limit = min(left, (lq.MaxBytes-size)/maxItemBytes+1)
		page, err := g.listChunk(ctx, table, lq)
		if err != nil {
			return ListPage{}, err
		}
		out.Items = append(out.Items, page.Items...)
		for _, it := range page.Items {
			size += len(it.Key) + len(it.Attributes)
		}
		left -= len(page.Items)
		out.NextPageToken = page.NextPageToken
		if page.NextPageToken == "" || len(page.Items) == 0 || left <= 0 || size >= lq.MaxBytes {
			return out, nil
		}
		lq.PageToken = page.NextPageToken
	}
}

// listChunk returns a page of lq.Limit items, ignoring lq.MaxBytes. It
// reads the bucket directory from the first bucket that can hold a match,
// then entries bucket by bucket, and verifies each entry against its item,
// stopping as soon as the page, plus one item to know whether another page
// follows, is complete.
func (g *Registry) listChunk(ctx context.Context, table string, lq ListQuery) (ListPage, error) {
	if err := CheckName(table); err != nil {
		return ListPage{}, err
	}
	if lq.Limit < 1 || lq.Limit > store.MaxLimit {
		return ListPage{}, invalid("limit %d outside 1..%d", lq.Limit, store.MaxLimit)
	}
	var low store.Bound // exclusive lower bound on (ts[, key]) in entry partitions
	var lowMs, afterMs *int64
	if lq.After != nil {
		// Stored timestamps are whole milliseconds, so "strictly after" a
		// time within a millisecond excludes that whole millisecond.
		a := time.UnixMilli(lq.After.UnixMilli()).UTC()
		low = store.Bound{Values: []any{a}}
		ms := a.UnixMilli()
		lowMs, afterMs = &ms, &ms
	}
	if lq.PageToken != "" {
		pos, err := decodeToken(lq.PageToken)
		if err != nil {
			return ListPage{}, err
		}
		if (pos.after == nil) != (afterMs == nil) || (pos.after != nil && *pos.after != *afterMs) {
			return ListPage{}, invalid("page_token belongs to a listing with a different after; resume with the same after, or start again without a page_token")
		}
		// A token's position always lies after its After.
		low = store.Bound{Values: []any{pos.ts, pos.key}}
		ms := pos.ts.UnixMilli()
		lowMs = &ms
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return ListPage{}, err
	}
	t := rec.ref(table)
	l := &lister{g: g, t: t, low: low, want: lq.Limit + 1}
	var from *int64
	if lowMs != nil {
		b := t.bucketOf(*lowMs)
		from = &b
	}
	err = walkBuckets(ctx, g.st, t, from, func(b int64, rows []bucketRow) error {
		// A bucket is scanned whole when the lower bound lies before it,
		// and only then may an empty result retire its bucket rows.
		whole := lowMs == nil || t.bucketOf(*lowMs) < b
		if err := l.scanBucket(ctx, b, rows, whole); err != nil {
			return err
		}
		if len(l.items) >= l.want {
			return errStop
		}
		return nil
	})
	if err != nil {
		return ListPage{}, err
	}
	out := ListPage{Items: l.items}
	if len(out.Items) > lq.Limit {
		out.Items = out.Items[:lq.Limit]
		last := out.Items[len(out.Items)-1]
		out.NextPageToken = encodeToken(position{ts: last.Timestamp, key: last.Key, after: afterMs})
	}
	return out, nil
}

// lister accumulates one page.
type lister struct {
	g     *Registry
	t     tableRef
	low   store.Bound
	want  int
	items []Item
	// last is the item last added, so that several entries of one
	// (timestamp, key) add it once.
	last position
}

// scanBucket appends the bucket's verified items after the lower bound
// until the page is complete or the bucket exhausted.
func (l *lister) scanBucket(ctx context.Context, b int64, rows []bucketRow, whole bool) error {
	q := store.Query{Partition: l.t.entryPartition(b)}
	if !whole {
		q.Low = l.low
	}
	seen := 0
	for len(l.items) < l.want {
		q.Limit = min(l.want-len(l.items), store.MaxLimit)
		page, err := kit.Query(ctx, l.g.st, ItemsTable, q)
		if err != nil {
			return fmt.Errorf("list %s: %w", l.t.name, err)
		}
		seen += len(page.Rows)
		items, err := l.verify(ctx, page.Rows)
		if err != nil {
			return err
		}
		l.items = append(l.items, items...)
		if page.NextPageToken == nil {
			break
		}
		q.PageToken = page.NextPageToken
	}
	if whole && seen == 0 {
		l.g.retireBucket(ctx, l.t, b, rows)
	}
	return nil
}

// verify reads the items of a run of entries, in parallel on remote
// backends, and returns those whose item is live with the entry's
// timestamp, in entry order, once each. Entries that fail the check are
// garbage of a lost race or a crash, or belong to a write still in flight;
// retire removes them once no such write can land.
func (l *lister) verify(ctx context.Context, rows []store.Row) ([]Item, error) {
	res := make([]itemRow, len(rows))
	tasks := make([]func(context.Context) error, len(rows))
	for i := range rows {
		tasks[i] = func(ctx context.Context) error {
			key, _ := rows[i].Clustering[1].(string)
			r, err := l.g.readItem(ctx, l.t, key)
			res[i] = r
			return err
		}
	}
	if err := parallel.Run(ctx, max(l.g.opts.ReadParallelism, 1), tasks); err != nil {
		return nil, err
	}
	out := make([]Item, 0, len(rows))
	for i, r := range res {
		ts, _ := rows[i].Clustering[0].(time.Time)
		if r.ok && r.item.Timestamp.Equal(ts) {
			// Entries of one (timestamp, key) are adjacent, within a page
			// and across pages (a page token skips them all).
			if !l.lastIs(ts, r.item.Key) {
				out = append(out, r.item)
				l.last = position{ts: ts, key: r.item.Key}
			}
			continue
		}
		l.g.metrics.stale.Inc()
		l.retire(ctx, rows[i], r)
	}
	return out, nil
}

// lastIs reports whether the item last added to the page is (ts, key).
func (l *lister) lastIs(ts time.Time, key string) bool {
	return l.last.key == key && l.last.ts.Equal(ts) && !l.last.ts.IsZero()
}

// inFlightGrace is how old an entry that lists nothing must be before a
// listing removes it: puts finish well within it, so listings never make
// a put in flight start over, however often they run. Removal is safe at
// any age (see retire); the grace only spares work.
const inFlightGrace = 30 * time.Second

// retire removes an entry that lists nothing, given its item row as just
// read. The entry may belong to a put still in flight, whose guarded item
// write would list its item through this very entry; so the item row is
// fenced first: a write of a new version, guarded by the version read
// (or, where there is no item, a fence row guarded by its absence). A put
// that read the row before the fence then fails its guard and starts over
// with a new entry, and the entry can go. Items from before versions are
// never fenced (their guard is weaker), so their stale entries are only
// skipped. Failures cost only a later listing's visit; they are logged.
func (l *lister) retire(ctx context.Context, entryRow store.Row, r itemRow) {
	if r.ok && r.ver == 0 {
		return
	}
	if written, ok := entryRow.Values[0].(time.Time); ok && l.g.now().Sub(written) < inFlightGrace {
		// Most likely a put in flight: fencing would only make it start
		// over. Listings skip the entry meanwhile.
		return
	}
	key, _ := entryRow.Clustering[1].(string)
	fence := store.Mutation{
		Partition:  l.t.itemPartition(key),
		Clustering: itemClustering(key),
		Cells:      []store.Cell{{Column: colVer, Value: newVersion(sourceOf(r.ver))}},
		If:         r.guard(),
		Expiry:     l.t.expiry,
	}
	// The fence keeps the item's expiry; a fence where there was no item
	// lives as long as the entry, and so as long as the in-flight put's
	// item would: a put that lands after it has expired writes an item
	// that has expired too.
	exp := r.item.ExpiresAt
	if !r.live {
		exp = entryRow.ExpiresAt
	}
	fence = withExpiry(fence, expMsOf(exp))
	err := l.g.st.Write(ctx, ItemsTable, []store.Mutation{fence})
	if errors.Is(err, store.ErrConflict) {
		// The item changed since it was read: the next listing decides.
		return
	}
	if err == nil {
		ts, _ := entryRow.Clustering[0].(time.Time)
		ver, _ := entryRow.Clustering[2].(int64)
		err = l.g.st.Write(ctx, ItemsTable, []store.Mutation{l.t.entryDelete(entry{ts: ts, key: key, ver: ver})})
	}
	if err != nil {
		l.g.log.Warn("could not remove a stale listing entry", "table", l.t.name, "err", err)
		return
	}
	l.g.metrics.repairs.WithLabelValues("stale_entry").Inc()
}

// retireBucket removes the never-expiring bucket rows of a bucket found
// empty, so that later listings do not visit it, then checks the bucket
// again and restores them if an entry landed meanwhile. Failures only cost
// later listings a visit, so they are logged, not returned.
func (g *Registry) retireBucket(ctx context.Context, t tableRef, b int64, rows []bucketRow) {
	var muts []store.Mutation
	var retired []bucketRow
	for _, r := range rows {
		if r.granule == noExpiry {
			muts = append(muts, t.bucketDelete(r))
			retired = append(retired, r)
			g.buckets.forget(t, r)
		}
	}
	if len(muts) == 0 {
		return
	}
	if err := g.st.Write(ctx, ItemsTable, muts); err != nil {
		g.log.Warn("could not retire an empty bucket", "table", t.name, "err", err)
		return
	}
	page, err := kit.Query(ctx, g.st, ItemsTable, store.Query{Partition: t.entryPartition(b), Limit: 1})
	if err == nil && len(page.Rows) == 0 {
		g.metrics.retired.Inc()
		return
	}
	muts = muts[:0]
	for _, r := range retired {
		muts = append(muts, t.bucketUpsert(r))
	}
	if werr := g.st.Write(ctx, ItemsTable, muts); werr != nil || err != nil {
		// The bucket may now hold an entry no directory row announces; the
		// writer's own check after its entry write restores the row.
		g.log.Warn("could not restore a retired bucket", "table", t.name, "err", errors.Join(err, werr))
	}
}

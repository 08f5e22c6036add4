package multitable

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
)

// ListQuery selects a page of a logical table's items.
type ListQuery struct {
	// After, when set, selects items whose timestamp is strictly after it;
	// nil selects every item.
	After *time.Time
	// Limit is the page size, 1..store.MaxLimit.
	Limit int
	// PageToken resumes after the last item of a previous page of the same
	// table; empty starts at the beginning.
	PageToken string
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
		page, err := st.Query(ctx, ItemsTable, q)
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

// List returns a page of a table's items in (timestamp, key) order. It
// reads the bucket directory from the first bucket that can hold a match,
// then entries bucket by bucket, and verifies each entry against its item,
// stopping as soon as the page, plus one item to know whether another page
// follows, is complete.
func (g *Registry) List(ctx context.Context, table string, lq ListQuery) (ListPage, error) {
	if err := CheckName(table); err != nil {
		return ListPage{}, err
	}
	if lq.Limit < 1 || lq.Limit > store.MaxLimit {
		return ListPage{}, invalid("limit %d outside 1..%d", lq.Limit, store.MaxLimit)
	}
	var low store.Bound // exclusive lower bound on (ts[, key]) in entry partitions
	var lowMs *int64
	if lq.After != nil {
		// Stored timestamps are whole milliseconds, so "strictly after" a
		// time within a millisecond excludes that whole millisecond.
		a := time.UnixMilli(lq.After.UnixMilli()).UTC()
		low = store.Bound{Values: []any{a}}
		ms := a.UnixMilli()
		lowMs = &ms
	}
	if lq.PageToken != "" {
		pos, err := decodeToken(lq.PageToken)
		if err != nil {
			return ListPage{}, err
		}
		if lowMs == nil || pos.ts.UnixMilli() >= *lowMs {
			low = store.Bound{Values: []any{pos.ts, pos.key}}
			ms := pos.ts.UnixMilli()
			lowMs = &ms
		}
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
	g.metrics.ops.WithLabelValues("list").Inc()
	out := ListPage{Items: l.items}
	if len(out.Items) > lq.Limit {
		out.Items = out.Items[:lq.Limit]
		last := out.Items[len(out.Items)-1]
		out.NextPageToken = encodeToken(position{ts: last.Timestamp, key: last.Key})
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
		page, err := l.g.st.Query(ctx, ItemsTable, q)
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

// verify reads the items of a run of entries, in parallel, and returns
// those whose item is live with the entry's timestamp, in entry order.
// Entries that fail the check are garbage of a race or a crash, or belong
// to a write still in flight; they are removed (removeEntry restores an
// entry whose write completes meanwhile).
func (l *lister) verify(ctx context.Context, rows []store.Row) ([]Item, error) {
	type result struct {
		item Item
		ok   bool
		err  error
	}
	res := make([]result, len(rows))
	check := func(i int) {
		key, _ := rows[i].Clustering[1].(string)
		it, ok, err := l.g.readItem(ctx, l.t, key)
		ts, _ := rows[i].Clustering[0].(time.Time)
		res[i] = result{item: it, ok: ok && it.Timestamp.Equal(ts), err: err}
	}
	if par := l.g.opts.ReadParallelism; par <= 1 || len(rows) <= 1 {
		for i := range rows {
			check(i)
		}
	} else {
		sem := make(chan struct{}, par)
		var wg sync.WaitGroup
		for i := range rows {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				check(i)
			})
		}
		wg.Wait()
	}
	out := make([]Item, 0, len(rows))
	for i, r := range res {
		if r.err != nil {
			return nil, r.err
		}
		if r.ok {
			out = append(out, r.item)
			continue
		}
		l.g.metrics.stale.Inc()
		ts, _ := rows[i].Clustering[0].(time.Time)
		key, _ := rows[i].Clustering[1].(string)
		if err := l.g.removeEntry(ctx, l.t, entry{ts: ts, key: key}); err != nil {
			l.g.log.Warn("could not remove a stale listing entry", "table", l.t.name, "err", err)
		}
	}
	return out, nil
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
	page, err := g.st.Query(ctx, ItemsTable, store.Query{Partition: t.entryPartition(b), Limit: 1})
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

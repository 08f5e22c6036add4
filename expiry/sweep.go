package expiry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebb-data/ebb/internal/parallel"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Sweeper physically deletes the rows its Store indexed, once they expire.
// SweepOnce (or Pass) runs one pass; it owns no loop: ebb.DB's sweeper
// role runs passes every SweepInterval, under a lease. It is safe for
// concurrent use; passes are serialised. Several
// processes may sweep the same backend: deletes are conditional and
// idempotent, so the only cost is duplicated work.
type Sweeper struct {
	s     *Store
	inner store.Store
	meta  store.Meta
	log   *slog.Logger
	pace  *pacer

	pass sync.Mutex // one pass at a time
	// wm is the first window not completely swept as of the last pass,
	// for an index with due markers (which saves no watermark). Guarded
	// by pass.
	wm int64

	// The schedule of an index with due markers (marks.go), in Unix ms:
	// next is the earliest marked window the last pass left pending,
	// woken the earliest window a write through this process marked since
	// that pass began; math.MaxInt64 when none. wake is signalled when a
	// write marks a window earlier than both.
	next, woken atomic.Int64
	wake        chan struct{}

	// lastPass is when the last pass began (Unix ms; guarded by pass),
	// and entries due at or before repeatUntil may have been reported to
	// Options.Removed already (removed.go).
	lastPass    int64
	repeatUntil atomic.Int64
	// busy is the wait Next gives after the last pass while rows keep
	// falling due (busyWait, nanoseconds); zero after a pass that found
	// none or failed.
	busy atomic.Int64

	// Retries of one backend call (constants; tests shorten them).
	retryBase, retryMax time.Duration
	retryAttempts       int
}

func newSweeper(s *Store, st state) *Sweeper {
	sw := &Sweeper{
		s:     s,
		inner: s.inner,
		meta:  store.Meta{S: s.inner},
		log:   s.opts.Logger.With("component", "expiry"),
		pace:  newPacer(s.opts.MaxDeletesPerSecond, time.Now),

		retryBase:     retryBase,
		retryMax:      retryMax,
		retryAttempts: retryAttempts,

		wm:   st.WatermarkMs,
		wake: make(chan struct{}, 1),
	}
	sw.next.Store(math.MaxInt64)
	sw.woken.Store(math.MaxInt64)
	return sw
}

// Result summarises one pass.
type Result struct {
	// Watermark is the start of the first window not yet completely
	// swept, after the pass.
	Watermark time.Time
	// Windows is how many windows the pass completed (the watermark moved
	// past them).
	Windows int
	// Partitions is how many index partitions the pass read.
	Partitions int
	// Entries is how many index entries the pass processed and removed.
	Entries int
	// Deleted is how many conditional deletes were applied. A row whose
	// expiry was extended after it was indexed survives its delete.
	Deleted int
	// Dropped is how many entries were removed without a delete: their
	// table is gone or their key no longer fits its schema.
	Dropped int
}

func (r *Result) add(o Result) {
	r.Partitions += o.Partitions
	r.Entries += o.Entries
	r.Deleted += o.Deleted
	r.Dropped += o.Dropped
}

// saveEvery bounds the work a crash during a long catch-up can lose: the
// watermark is saved at least every saveEvery windows.
const saveEvery = 64

// SweepOnce sweeps every window up to the one containing now that may hold
// entries: entries due at or before now are processed (their rows deleted
// if still expired, then the entries removed), and the watermark advances
// past every window that ended at or before now and was swept without
// error. An error stops the pass; what it finished stays done. The windows
// are those named by due markers (marks.go), or, for an index created
// without them, every window from the durable watermark on.
func (sw *Sweeper) SweepOnce(ctx context.Context, now time.Time) (Result, error) {
	sw.pass.Lock()
	defer sw.pass.Unlock()
	covered := sw.s.opts.SweepInterval
	if sw.lastPass != 0 {
		covered = time.Duration(now.UnixMilli()-sw.lastPass) * time.Millisecond
	}
	sw.notePass(now, false)
	var res Result
	var err error
	if sw.s.marked {
		res, err = sw.sweepMarked(ctx, now)
	} else {
		res, err = sw.sweepWatermark(ctx, now)
	}
	if err != nil {
		sw.notePass(now, true)
		sw.busy.Store(0)
	} else {
		sw.busy.Store(int64(sw.busyWait(res.Entries, covered)))
	}
	return res, err
}

// sweepWatermark is SweepOnce for an index created without due markers.
func (sw *Sweeper) sweepWatermark(ctx context.Context, now time.Time) (Result, error) {
	st, ok, err := loadState(ctx, sw.meta)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, fmt.Errorf("expiry: sweeper state missing from %s", store.MetaTable)
	}
	l := sw.s.layout
	nowMs := now.UnixMilli()
	var res Result
	wm, saved := st.WatermarkMs, st.WatermarkMs
	var passErr error
	for w := wm; w <= l.windowOf(nowMs); w += l.windowMs {
		if passErr = ctx.Err(); passErr != nil {
			break
		}
		if passErr = sw.sweepWindow(ctx, w, now, &res); passErr != nil {
			break
		}
		if w+l.windowMs-1 > nowMs {
			break // the current window: more of its entries will fall due
		}
		wm = w + l.windowMs
		res.Windows++
		if wm-saved >= saveEvery*l.windowMs {
			st.WatermarkMs = wm
			if passErr = saveState(ctx, sw.meta, st); passErr != nil {
				break
			}
			saved = wm
		}
	}
	if wm != saved {
		st.WatermarkMs = wm
		// Progress made before a cancellation is still worth keeping.
		if err := saveState(context.WithoutCancel(ctx), sw.meta, st); err != nil && passErr == nil {
			passErr = err
		}
	}
	res.Watermark = time.UnixMilli(wm).UTC()
	sw.s.m.wmLag.Set(now.Sub(res.Watermark).Seconds())
	return res, passErr
}

// sweepMarked is SweepOnce for an index with due markers: it reads the
// markers in window order, sweeps each marked window up to the one
// containing now, and removes the marker of each window it finished. The
// first marker past now is where the next pass is due (Next). Reading the
// markers is the whole cost of a pass with nothing due: one read.
func (sw *Sweeper) sweepMarked(ctx context.Context, now time.Time) (Result, error) {
	// Writes that mark a window from here on are seen by this pass's
	// read, or, if they land after it, are kept in woken for Next.
	sw.woken.Store(math.MaxInt64)
	l := sw.s.layout
	nowMs := now.UnixMilli()
	cur := l.windowOf(nowMs)
	next, wm := int64(math.MaxInt64), cur
	var res Result
	var passErr error
	var token []byte
pages:
	for {
		ws, more, err := sw.readMarks(ctx, token)
		if err != nil {
			passErr, wm = err, min(wm, sw.wm)
			break
		}
		for _, w := range ws {
			if w > cur {
				next = min(next, w)
				break pages
			}
			// Until it is finished, w is the first window not swept.
			wm = min(wm, w)
			if passErr = ctx.Err(); passErr != nil {
				break pages
			}
			if passErr = sw.sweepWindow(ctx, w, now, &res); passErr != nil {
				break pages
			}
			if w+l.windowMs-1 > nowMs {
				// The current window: more of its entries will fall due.
				next = min(next, w)
				continue
			}
			err := sw.retry(ctx, func() error {
				return sw.inner.Write(ctx, IndexTable, []store.Mutation{markDeletion(w)})
			})
			if err != nil {
				passErr = fmt.Errorf("expiry: remove due marker: %w", err)
				break pages
			}
			wm = cur
		}
		if more == nil {
			break
		}
		token = more
	}
	if passErr != nil {
		// The loop backs off from the failure, up to IdleInterval (Next):
		// a failing pass must not run every SweepInterval.
		next = math.MaxInt64
	}
	sw.next.Store(next)
	if wm > sw.wm {
		res.Windows = int((wm - sw.wm) / l.windowMs)
		sw.wm = wm
	}
	res.Watermark = time.UnixMilli(wm).UTC()
	sw.s.m.wmLag.Set(now.Sub(res.Watermark).Seconds())
	return res, passErr
}

// sweepWindow sweeps the index partitions of one window together, in
// rounds: a round reads a page of the entries due at or before now from
// every partition not yet finished (Parallelism reads at a time), deletes
// the rows the pages name, each table's in key order (deleteRows), and
// then removes the entries. Deleting one window's rows together rather
// than partition by partition matters on the embedded backend: the rows
// that fall due together are neighbours in a table (rows written at the
// same time), and an index partition holds only one in Shards of them, so
// a partition's batch would seek through the table's memtable and levels
// from afar for each row, where the window's batch steps from each row to
// the next. The first failure stops the round; the pass is retried as a
// whole.
func (sw *Sweeper) sweepWindow(ctx context.Context, w int64, now time.Time, res *Result) error {
	shards := int(sw.s.layout.shards)
	queries := make([]*store.Query, shards) // nil once the partition is read to its end
	for shard := range queries {
		queries[shard] = &store.Query{
			Partition: []any{w, int64(shard)},
			High:      store.Bound{Values: []any{time.UnixMilli(now.UnixMilli()).UTC()}, Inclusive: true},
			Limit:     sw.pageSize(),
		}
	}
	res.Partitions += shards
	pages := make([][]store.Row, shards)
	for {
		tasks := make([]func(context.Context) error, 0, shards)
		for shard, q := range queries {
			pages[shard] = nil
			if q == nil {
				continue
			}
			tasks = append(tasks, func(ctx context.Context) error {
				page, err := sw.readIndex(ctx, *q)
				if err != nil {
					return fmt.Errorf("expiry: read window %d shard %d: %w", w, shard, err)
				}
				pages[shard] = page.Rows
				if page.NextPageToken == nil {
					queries[shard] = nil
				} else {
					q.PageToken = page.NextPageToken
				}
				return nil
			})
		}
		if len(tasks) == 0 {
			return nil
		}
		if err := parallel.Run(ctx, sw.s.opts.Parallelism, tasks); err != nil {
			return err
		}
		if err := sw.processPages(ctx, w, pages, res); err != nil {
			return err
		}
	}
}

// pageSize is how many index entries are read at once from one partition:
// a round of a window (sweepWindow) holds a page of every partition, as
// many entries as Parallelism pages of ten delete batches each, and at
// least a batch per partition.
func (sw *Sweeper) pageSize() int {
	o := sw.s.opts
	round := min(10*o.BatchSize, store.MaxLimit) * o.Parallelism
	return min(max(o.BatchSize, round/int(sw.s.layout.shards)), store.MaxLimit)
}

// readIndex reads a page of IndexTable, retried on throttling.
func (sw *Sweeper) readIndex(ctx context.Context, q store.Query) (store.Page, error) {
	var page store.Page
	err := sw.retry(ctx, func() error {
		var err error
		page, err = kit.Query(ctx, sw.inner, IndexTable, q)
		return err
	})
	return page, err
}

// processPages deletes the rows one round's pages of entries point at
// (pages[shard] from partition (w, shard)), grouped by table, then removes
// the entries. A crash in between leaves the entries, to be processed
// again: conditional deletes are idempotent.
func (sw *Sweeper) processPages(ctx context.Context, w int64, pages [][]store.Row, res *Result) error {
	total := 0
	for _, rows := range pages {
		total += len(rows)
	}
	all := make([]entry, 0, total)
	var removals []func(context.Context) error
	for shard, rows := range pages {
		if len(rows) == 0 {
			continue
		}
		processed := make([]store.Mutation, 0, len(rows))
		for _, r := range rows {
			e, err := entryFromRow(w, int64(shard), r)
			if err != nil {
				sw.log.Warn("removing malformed index entry", "window", w, "shard", shard, "err", err)
				sw.s.m.dropped.WithLabelValues("malformed").Inc()
				res.Dropped++
			} else {
				all = append(all, e)
			}
			processed = append(processed, store.Mutation{
				Kind: store.DeleteRow, Partition: []any{w, int64(shard)}, Clustering: r.Clustering,
			})
		}
		res.Entries += len(processed)
		// An index partition's entries are removed in batches of their
		// own: a batch within one partition is what every backend writes
		// best (CQL's unlogged batch above all).
		for chunk := range slices.Chunk(processed, sw.s.opts.BatchSize) {
			removals = append(removals, func(ctx context.Context) error {
				err := sw.retry(ctx, func() error { return sw.inner.Write(ctx, IndexTable, chunk) })
				if err != nil {
					return fmt.Errorf("expiry: remove swept entries: %w", err)
				}
				return nil
			})
		}
	}
	sortByRow(all)
	for lo := 0; lo < len(all); {
		hi := lo + 1
		for hi < len(all) && all[hi].table == all[lo].table {
			hi++
		}
		if err := sw.deleteRows(ctx, all[lo].table, all[lo:hi:hi], res); err != nil {
			return err
		}
		lo = hi
	}
	return parallel.Run(ctx, sw.s.opts.Parallelism, removals)
}

// sortByRow orders entries by table and then by their row's key
// (compareRowKeys).
func sortByRow(entries []entry) {
	slices.SortFunc(entries, func(a, b entry) int {
		if c := strings.Compare(a.table, b.table); c != 0 {
			return c
		}
		return compareRowKeys(&a, &b)
	})
}

// deleteRows issues conditional deletes for entries of one table, given
// in the order of the rows' keys, in batches of BatchSize, Parallelism at
// a time: an index page lists its entries by due time and hash, scattered
// over the table, and a batch in key order is cheaper for a backend to
// apply (Pebble finds each key of a sorted batch in its memtable a step
// from the one before rather than from the top).
func (sw *Sweeper) deleteRows(ctx context.Context, table string, entries []entry, res *Result) error {
	muts, entries, err := sw.deletions(ctx, table, entries, res)
	if err != nil || len(muts) == 0 {
		return err
	}
	var mu sync.Mutex
	n := sw.s.opts.BatchSize
	tasks := make([]func(context.Context) error, 0, (len(muts)+n-1)/n)
	for lo := 0; lo < len(muts); lo += n {
		hi := min(lo+n, len(muts))
		tasks = append(tasks, func(ctx context.Context) error {
			var r Result
			err := sw.deleteBatch(ctx, table, muts[lo:hi:hi], entries[lo:hi:hi], &r)
			mu.Lock()
			res.add(r)
			mu.Unlock()
			return err
		})
	}
	return parallel.Run(ctx, sw.s.opts.Parallelism, tasks)
}

// deleteBatch applies one batch of conditional deletes of a table, after
// reporting it (Options.Removed). A key the table refuses is dropped and
// the rest retried; a table that is gone drops the whole batch.
func (sw *Sweeper) deleteBatch(ctx context.Context, table string, muts []store.Mutation, entries []entry, res *Result) error {
	for len(muts) > 0 {
		n := len(muts)
		if err := sw.pace.wait(ctx, n); err != nil {
			return err
		}
		if err := sw.report(ctx, table, muts, entries); err != nil {
			return err
		}
		err := sw.retry(ctx, func() error { return sw.inner.Write(ctx, table, muts) })
		var me *store.MutationError
		switch {
		case err == nil:
			sw.s.m.deleted.Add(float64(n))
			done := sw.s.opts.Now().UnixMilli()
			for i := range entries {
				sw.s.m.lag.Observe(float64(done-entries[i].exp) / 1e3)
			}
			res.Deleted += n
			return nil
		case errors.Is(err, store.ErrTableNotFound):
			sw.dropEntries("table_gone", n, res)
			return nil
		case errors.As(err, &me) && me.Index >= 0 && me.Index < n &&
			(errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTooLarge)):
			// One key the table refuses (its schema changed under a
			// stale spec) must not block the others: drop it and retry.
			sw.log.Warn("dropping index entry the table refuses", "table", table, "err", err)
			sw.dropEntries("invalid_key", 1, res)
			muts = append(muts[:me.Index:me.Index], muts[me.Index+1:]...)
			entries = append(entries[:me.Index:me.Index], entries[me.Index+1:]...)
		default:
			return fmt.Errorf("expiry: delete expired rows of %s: %w", table, err)
		}
	}
	return nil
}

// deletions decodes the entries' keys into conditional deletes and returns
// them with the entries they came from; entries whose keys no longer decode
// under the table's spec are dropped. If the table is gone, every entry is
// dropped.
func (sw *Sweeper) deletions(ctx context.Context, table string, entries []entry, res *Result) ([]store.Mutation, []entry, error) {
	spec, err := sw.s.specs.Get(ctx, table)
	if errors.Is(err, store.ErrTableNotFound) {
		sw.dropEntries("table_gone", len(entries), res)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	muts := make([]store.Mutation, 0, len(entries))
	kept := make([]entry, 0, len(entries))
	refreshed := false
	for _, e := range entries {
		p, c, err := decodeKey(spec, e.pk, e.ck)
		if err != nil && !refreshed {
			// The table may have been re-created with another schema.
			refreshed = true
			if spec, err = sw.s.specs.Refresh(ctx, table); err != nil {
				if errors.Is(err, store.ErrTableNotFound) {
					sw.dropEntries("table_gone", len(entries), res)
					return nil, nil, nil
				}
				return nil, nil, err
			}
			p, c, err = decodeKey(spec, e.pk, e.ck)
		}
		if err != nil {
			sw.dropEntries("invalid_key", 1, res)
			continue
		}
		kept = append(kept, e)
		muts = append(muts, store.Mutation{Kind: store.DeleteIfExpired, Partition: p, Clustering: c})
	}
	return muts, kept, nil
}

// compareRowKeys orders entries of one table by their row's encoded key.
// The encoded partition key is prefix-free, so comparing pk then ck is the
// order of the backend's row keys.
func compareRowKeys(a, b *entry) int {
	if c := bytes.Compare(a.pk, b.pk); c != 0 {
		return c
	}
	return bytes.Compare(a.ck, b.ck)
}

func decodeKey(spec *store.TableSpec, pk, ck []byte) (p, c []any, err error) {
	p, rest, err := store.DecodeTuple(spec.PartitionKey, pk, false)
	if err == nil && len(rest) > 0 {
		err = errBadEntry
	}
	if err != nil {
		return nil, nil, err
	}
	c, err = store.DecodeClustering(spec, ck)
	return p, c, err
}

func (sw *Sweeper) dropEntries(reason string, n int, res *Result) {
	sw.s.m.dropped.WithLabelValues(reason).Add(float64(n))
	res.Dropped += n
}

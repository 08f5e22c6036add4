package multitable

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/ebb-data/ebb/internal/rewrite"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// kindRewrite documents are the default-TTL rewrite jobs of logical
// tables, keyed by table name.
const kindRewrite = "table_rewrite"

// RewriteItems is how many items one batch of a rewrite visits: the job's
// cursor is saved after each batch, so a restart repeats at most this
// many.
const RewriteItems = 100

// RewriteJob is the state of a table's default-TTL rewrite (see
// Config.Rewrite): its target, its progress, and when it started and
// ended.
type RewriteJob = rewrite.Job

func (g *Registry) jobs() rewrite.Jobs { return rewrite.Jobs{Meta: g.meta, Kind: kindRewrite} }

// startRewrite records a rewrite of the table's items to its default TTL,
// replacing any job it had, and wakes the runner.
func (g *Registry) startRewrite(ctx context.Context, name string, r record) error {
	ttl := time.Duration(r.DefaultTTLMs) * time.Millisecond
	if _, err := g.jobs().Start(ctx, name, ttl, strconv.FormatInt(r.Gen, 10), g.now()); err != nil {
		return err
	}
	g.log.Info("logical table rewrite started", "table", name, "default_ttl", ttl)
	if g.opts.RewriteStarted != nil {
		g.opts.RewriteStarted()
	}
	return nil
}

// Rewrite returns the table's last default-TTL rewrite, running or ended,
// and false when none was asked for since the table was created.
func (g *Registry) Rewrite(ctx context.Context, name string) (RewriteJob, bool, error) {
	r, err := g.lookup(ctx, name)
	if err != nil {
		return RewriteJob{}, false, err
	}
	j, ok, err := g.jobs().Get(ctx, name)
	if err != nil || !ok || j.Scope != strconv.FormatInt(r.Gen, 10) {
		return RewriteJob{}, false, err
	}
	return j, true, nil
}

// RunRewrites runs every pending default-TTL rewrite of logical tables to
// its end (see rewrite.Jobs.Run): the background role that holds the
// lease calls it, with its fence. saved, if set, sees each batch's
// progress.
func (g *Registry) RunRewrites(ctx context.Context, fence func(context.Context) error, saved func(key string, before, after RewriteJob)) error {
	// Another process may put under the old default until its cached
	// record expires: a job's first batch waits that long.
	return g.jobs().Run(ctx, rewrite.RunOptions{Batch: g.runBatch, Fence: fence, Now: g.now, Saved: saved, Settle: max(g.opts.CacheTTL, 0)})
}

// runBatch visits the next Options.RewriteBatch items of a job's table, in
// the table's listing order (see rewrite.Batch). An item whose expiry came
// from the table's default gets the time of its last write (a put or a
// patch, as its listing entry records it) + the job's TTL, none when that
// is zero, and is deleted when that time has passed; an item put with a
// ttl of its own keeps its expiry, and so does an item written before
// items recorded where their expiry came from, which is counted skipped.
// Items already expired are not brought back.
func (g *Registry) runBatch(ctx context.Context, name string, j *rewrite.Job) error {
	r, ok, err := loadRecord(ctx, g.meta, name)
	if err != nil {
		return err
	}
	if !ok || !r.live() || strconv.FormatInt(r.Gen, 10) != j.Scope || r.DefaultTTLMs != j.TTL.Milliseconds() {
		// Deleted, created again, or its default changed since.
		j.State = rewrite.StateSuperseded
		return nil
	}
	page, err := g.list(ctx, name, ListQuery{Limit: g.opts.RewriteBatch, PageToken: string(j.Cursor)})
	if errors.Is(err, ErrNoTable) {
		j.State = rewrite.StateSuperseded
		return nil
	}
	if err != nil {
		return err
	}
	t := r.ref(name)
	for _, it := range page.Items {
		if err := g.rewriteItem(ctx, t, it.Key, j); err != nil {
			return err
		}
	}
	j.Cursor = []byte(page.NextPageToken)
	if page.NextPageToken == "" {
		j.State, j.Cursor = rewrite.StateDone, nil
	}
	return nil
}

// Outcomes of one item's rewrite other than a write.
var (
	errRewriteSkip   = errors.New("multitable: rewrite skips the item")
	errRewriteRemove = errors.New("multitable: rewrite removes the item")
)

// rewriteItem gives one item its expiry under the job's TTL, guarded by
// the version it read as every write is.
func (g *Registry) rewriteItem(ctx context.Context, t tableRef, key string, j *rewrite.Job) error {
	j.Scanned++
	var gone itemRow
	_, err := g.writeItem(ctx, t, key, "rewrite", func(cur itemRow) (itemWrite, error) {
		if !cur.ok || sourceOf(cur.ver) != srcDefault {
			return itemWrite{}, errRewriteSkip
		}
		written, ok, err := g.writtenAt(ctx, t, cur)
		if err != nil {
			return itemWrite{}, err
		}
		if !ok {
			return itemWrite{}, errRewriteSkip
		}
		var expMs int64
		if j.TTL > 0 {
			expMs = written.Add(j.TTL).UnixMilli()
		}
		switch {
		case expMs == expMsOf(cur.item.ExpiresAt):
			return itemWrite{}, errRewriteSkip
		case expMs != 0 && expMs <= g.now().UnixMilli():
			gone = cur
			return itemWrite{}, errRewriteRemove
		}
		return itemWrite{ts: cur.item.Timestamp, attrs: cur.item.Attributes, expMs: expMs, src: srcDefault, written: written}, nil
	})
	switch {
	case err == nil:
		j.Rewritten++
	case errors.Is(err, errRewriteSkip):
		j.Skipped++
	case errors.Is(err, errRewriteRemove):
		// Deleted only if still the version read: a put meanwhile wins.
		err := g.DeleteIf(ctx, t.name, key, gone.item.Version)
		switch {
		case errors.Is(err, ErrPrecondition):
			j.Skipped++
		case err != nil:
			return err
		default:
			j.Removed++
		}
	default:
		return err
	}
	return nil
}

// writtenAt returns when the item's last write began, as its listing
// entry records it: the entry of the item's version, or, for an item a
// listing fenced (a new version without an entry of its own), the latest
// entry of its (timestamp, key). It returns false when no entry records
// it.
func (g *Registry) writtenAt(ctx context.Context, t tableRef, cur itemRow) (time.Time, bool, error) {
	ts := cur.item.Timestamp
	prefix := []any{ts, cur.item.Key}
	q := store.Query{
		Partition: t.entryPartition(t.bucketOf(ts.UnixMilli())),
		Low:       store.Bound{Values: prefix, Inclusive: true},
		High:      store.Bound{Values: prefix, Inclusive: true},
		Limit:     store.MaxLimit,
	}
	var latest time.Time
	for {
		page, err := kit.Query(ctx, g.st, ItemsTable, q)
		if err != nil {
			return time.Time{}, false, err
		}
		for _, row := range page.Rows {
			at, ok := row.Values[0].(time.Time)
			if !ok {
				continue
			}
			if ver, _ := row.Clustering[2].(int64); ver == cur.ver {
				return at, true, nil
			}
			if at.After(latest) {
				latest = at
			}
		}
		if page.NextPageToken == nil {
			return latest, !latest.IsZero(), nil
		}
		q.PageToken = page.NextPageToken
	}
}

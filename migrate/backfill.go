package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// DefaultBackfillBatch is the rows a backfill reads and copies per step
// when BackfillOptions.BatchSize is zero: at most one such batch is ever
// copied twice, after a crash between copying it and checkpointing.
const DefaultBackfillBatch = 500

// BackfillOptions configure one backfill run.
type BackfillOptions struct {
	// RowsPerSecond bounds the legacy rows scanned per second; zero is
	// unbounded.
	RowsPerSecond float64 `json:"rows_per_second,omitempty"`
	// UnitsPerSecond bounds the request units spent per second: the read
	// units the legacy backend reports for its scan, plus one per row
	// copied. Zero is unbounded.
	UnitsPerSecond float64 `json:"units_per_second,omitempty"`
	// BatchSize is the rows per step: 1..timeseries.MaxBatch; zero means
	// DefaultBackfillBatch.
	BatchSize int `json:"batch_size,omitempty"`
	// DryRun scans and counts without copying: a census of the legacy
	// table (live rows, newest TTL).
	DryRun bool `json:"dry_run,omitempty"`
	// Restart begins a new pass from the start of the table even when the
	// last one did not finish.
	Restart bool `json:"restart,omitempty"`
	// Progress, when set, is called with the checkpoint after each step.
	Progress func(Checkpoint) `json:"-"`

	// beforeSave, in tests, runs after a step's rows are copied and
	// before its checkpoint is saved: where a crash costs a re-copy.
	beforeSave func()
}

// Checkpoint is a backfill's durable progress, kept in ebb_meta: a pass
// resumes from Cursor after a crash or a stop.
type Checkpoint struct {
	Pass       int       `json:"pass"`
	DryRun     bool      `json:"dry_run"`
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Done       bool      `json:"done"`
	// Cursor is the legacy scan's position; nil at the start.
	Cursor []byte `json:"cursor,omitempty"`
	// Rows of this pass, by outcome.
	Scanned          int64 `json:"scanned"`
	Copied           int64 `json:"copied"`
	SkippedExpired   int64 `json:"skipped_expired"`
	SkippedRetention int64 `json:"skipped_retention"`
	SkippedNoShard   int64 `json:"skipped_no_shard"`
	// Units are the request units spent by this pass.
	Units float64 `json:"units"`
	// TotalEstimate is the legacy table's row count as estimated when the
	// pass began: the progress bar's total.
	TotalEstimate int64 `json:"total_estimate"`
	// RowsPerSecond is the scan rate of the latest run; ETA the time left
	// at that rate.
	RowsPerSecond float64       `json:"rows_per_second"`
	ETA           time.Duration `json:"eta"`
	// Error is why the latest run stopped, when it failed.
	Error string `json:"error,omitempty"`
	// Seen is this pass's census so far; Census that of the last pass
	// that completed.
	Seen   *Census `json:"seen,omitempty"`
	Census *Census `json:"census,omitempty"`
	// LastCopy is the last pass that copied (not a dry run) and completed.
	LastCopy *PassSummary `json:"last_copy,omitempty"`
}

// PassSummary is a completed backfill pass.
type PassSummary struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Copied     int64     `json:"copied"`
}

// Census is what a scan saw of the legacy table's live rows: enough to
// estimate how many are still live later, and when the last expires.
type Census struct {
	NewestExpiry time.Time `json:"newest_expiry,omitzero"`
	// NoExpiry counts rows without a TTL: they never expire by
	// themselves.
	NoExpiry int64 `json:"no_expiry"`
	// ByHour counts live rows by the hour their TTL falls in (Unix
	// seconds of the hour's start).
	ByHour map[int64]int64 `json:"by_hour"`
}

func (c *Census) add(exp time.Time) {
	if exp.IsZero() {
		c.NoExpiry++
		return
	}
	if exp.After(c.NewestExpiry) {
		c.NewestExpiry = exp
	}
	c.ByHour[exp.Unix()/3600*3600]++
}

// liveAt estimates the rows still live at now: those whose TTL hour has
// not ended (so at most an hour's rows too many).
func (c *Census) liveAt(now time.Time) int64 {
	n := c.NoExpiry
	for h, k := range c.ByHour {
		if time.Unix(h+3600, 0).After(now) {
			n += k
		}
	}
	return n
}

// throttle returns how long to wait, after elapsed, so that rows and
// units spent stay within the rates (zero rates are unbounded).
func throttle(rows, units, rowsPerSecond, unitsPerSecond float64, elapsed time.Duration) time.Duration {
	need := 0.0
	if rowsPerSecond > 0 {
		need = rows / rowsPerSecond
	}
	if unitsPerSecond > 0 {
		need = max(need, units/unitsPerSecond)
	}
	return max(time.Duration(need*float64(time.Second))-elapsed, 0)
}

// Backfill copies the live rows of index's legacy table into their
// shards, resuming the last pass from its checkpoint unless it completed
// (or opts.Restart), and returns the checkpoint it ended with. Rows past
// their TTL, past the index's retention, or with no shard (beyond the
// runway) are skipped and counted. After each step the checkpoint is
// saved with a compare-and-swap, so a second backfill of the same index,
// here or on another replica, stops with store.ErrConflict rather than
// interleave.
func (s *Service) Backfill(ctx context.Context, index string, opts BackfillOptions) (Checkpoint, error) {
	if opts.BatchSize == 0 {
		opts.BatchSize = DefaultBackfillBatch
	}
	if opts.BatchSize < 1 || opts.BatchSize > timeseries.MaxBatch || opts.RowsPerSecond < 0 || opts.UnitsPerSecond < 0 {
		return Checkpoint{}, store.Errorf(store.ErrInvalid, "backfill: batch_size 1..%d and non-negative rates", timeseries.MaxBatch)
	}
	cfg, err := s.idx.IndexConfig(ctx, index)
	if err != nil {
		return Checkpoint{}, err
	}
	st, _, err := s.load(ctx, index)
	if err != nil {
		return Checkpoint{}, err
	}
	if st == nil {
		return Checkpoint{}, notMigrating(index)
	}
	src, err := s.source(ctx, st)
	if err != nil {
		return Checkpoint{}, err
	}
	old, prev, err := s.loadCheckpoint(ctx, index)
	if err != nil {
		return Checkpoint{}, err
	}
	var cp Checkpoint
	if old != nil {
		cp = *old
	}
	if old == nil || old.Done || opts.Restart {
		est, err := src.Estimate(ctx)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("migrate: estimate legacy rows: %w", err)
		}
		cp = Checkpoint{
			Pass: cp.Pass + 1, DryRun: opts.DryRun, StartedAt: s.now(), TotalEstimate: est,
			Seen: &Census{ByHour: map[int64]int64{}}, Census: cp.Census, LastCopy: cp.LastCopy,
		}
	}
	cp.Error = ""
	if prev, err = s.saveCheckpoint(ctx, index, prev, &cp); err != nil {
		return cp, err
	}
	runStart := s.now()
	var runRows, runUnits float64
	fail := func(err error) (Checkpoint, error) {
		if ctx.Err() == nil && !errors.Is(err, store.ErrConflict) {
			cp.Error = err.Error()
			_, _ = s.saveCheckpoint(context.WithoutCancel(ctx), index, prev, &cp)
		}
		s.metrics.backfillLag.WithLabelValues(index).Set(0)
		return cp, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		rows, next, units, err := src.Scan(ctx, cp.Cursor, opts.BatchSize)
		if err != nil {
			return fail(fmt.Errorf("migrate: scan legacy table: %w", err))
		}
		now := s.now()
		copyRows := make([]timeseries.Event, 0, len(rows))
		var expired, pastRetention, noShard int64
		for _, r := range rows {
			switch {
			case !r.ExpiresAt.IsZero() && !r.ExpiresAt.After(now):
				expired++
				continue
			case timeseries.CheckEvent(r.Event) != nil:
				// A row ebb cannot index; it can only be reported.
				noShard++
				continue
			}
			cp.Seen.add(r.ExpiresAt)
			if !r.Timestamp.Truncate(time.Millisecond).Add(cfg.Retention).After(now) {
				pastRetention++
				continue
			}
			ok, err := s.idx.HasShard(ctx, cfg, r.Timestamp)
			if err != nil {
				return fail(err)
			}
			if !ok {
				noShard++
				continue
			}
			copyRows = append(copyRows, r.Event)
		}
		if !cp.DryRun && len(copyRows) > 0 {
			if _, err := s.idx.PutShards(ctx, index, copyRows); err != nil {
				return fail(fmt.Errorf("migrate: copy %d rows: %w", len(copyRows), err))
			}
		}
		if opts.beforeSave != nil {
			opts.beforeSave()
		}
		copied := int64(len(copyRows))
		if cp.DryRun {
			copied = 0
		}
		cp.Cursor = next
		cp.Scanned += int64(len(rows))
		cp.Copied += copied
		cp.SkippedExpired += expired
		cp.SkippedRetention += pastRetention
		cp.SkippedNoShard += noShard
		cp.Units += units + float64(copied)
		runRows += float64(len(rows))
		runUnits += units + float64(copied)
		if el := now.Sub(runStart).Seconds(); el > 0 {
			cp.RowsPerSecond = runRows / el
		}
		if left := cp.TotalEstimate - cp.Scanned; left > 0 && cp.RowsPerSecond > 0 {
			cp.ETA = time.Duration(float64(left) / cp.RowsPerSecond * float64(time.Second)).Round(time.Second)
		} else {
			cp.ETA = 0
		}
		if next == nil {
			cp.Done, cp.FinishedAt, cp.ETA = true, now, 0
			cp.Census, cp.Seen = cp.Seen, nil
			if !cp.DryRun {
				cp.LastCopy = &PassSummary{StartedAt: cp.StartedAt, FinishedAt: now, Copied: cp.Copied}
			}
		}
		if prev, err = s.saveCheckpoint(ctx, index, prev, &cp); err != nil {
			return fail(err)
		}
		for outcome, n := range map[string]int64{"copied": copied, "expired": expired, "past_retention": pastRetention, "no_shard": noShard} {
			if n > 0 {
				s.metrics.backfillRows.WithLabelValues(index, outcome).Add(float64(n))
			}
		}
		s.metrics.backfillLag.WithLabelValues(index).Set(cp.ETA.Seconds())
		if opts.Progress != nil {
			opts.Progress(cp)
		}
		if cp.Done {
			if cp.Census != nil {
				s.metrics.legacyLive.WithLabelValues(index).Set(float64(cp.Census.liveAt(now)))
			}
			return cp, nil
		}
		if d := throttle(runRows, runUnits, opts.RowsPerSecond, opts.UnitsPerSecond, s.now().Sub(runStart)); d > 0 {
			if err := s.wait(ctx, d); err != nil {
				return fail(err)
			}
		}
	}
}

func (s *Service) loadCheckpoint(ctx context.Context, index string) (*Checkpoint, []byte, error) {
	doc, err := store.Meta{S: s.st}.Get(ctx, metaBackfill, index)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: load backfill checkpoint of %s: %w", index, err)
	}
	var cp Checkpoint
	if err := json.Unmarshal(doc, &cp); err != nil {
		return nil, nil, fmt.Errorf("migrate: %s: corrupt backfill checkpoint: %w", index, err)
	}
	return &cp, doc, nil
}

// saveCheckpoint stores cp in place of prev and returns the document
// stored, the next save's prev.
func (s *Service) saveCheckpoint(ctx context.Context, index string, prev []byte, cp *Checkpoint) ([]byte, error) {
	cp.UpdatedAt = s.now()
	doc, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("migrate: encode checkpoint: %w", err)
	}
	if err := (store.Meta{S: s.st}).CompareAndSwap(ctx, metaBackfill, index, prev, doc); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("migrate: the backfill checkpoint of %s moved: another backfill runs: %w", index, err)
		}
		return nil, fmt.Errorf("migrate: save backfill checkpoint of %s: %w", index, err)
	}
	return doc, nil
}

// run is a backfill running in the background here; done is closed when
// it has returned.
type run struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartBackfill runs Backfill in the background, owned by the Service:
// StopBackfill or Close stops it, leaving its checkpoint to resume from.
// A backfill of the index already running here is store.ErrConflict.
func (s *Service) StartBackfill(index string, opts BackfillOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("migrate: service closed: %w", store.ErrClosed)
	}
	if _, ok := s.runs[index]; ok {
		return store.Errorf(store.ErrConflict, "a backfill of %s is already running", index)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	r := &run{cancel: cancel, done: make(chan struct{})}
	s.runs[index] = r
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(r.done)
		defer cancel()
		cp, err := s.Backfill(ctx, index, opts)
		s.mu.Lock()
		if s.runs[index] == r {
			delete(s.runs, index)
		}
		s.mu.Unlock()
		switch {
		case err == nil:
			s.log.Info("backfill done", "index", index, "pass", cp.Pass, "scanned", cp.Scanned, "copied", cp.Copied)
		case ctx.Err() != nil:
			s.log.Info("backfill stopped", "index", index, "pass", cp.Pass, "scanned", cp.Scanned)
		default:
			s.log.Error("backfill failed", "index", index, "err", err)
		}
	}()
	return nil
}

// StopBackfill stops index's background backfill, if one runs here, and
// reports whether one did. It returns once the backfill has (after the
// step in flight), so that a backfill started next does not meet it at
// the checkpoint. Its checkpoint keeps its progress.
func (s *Service) StopBackfill(index string) bool { return s.stopRun(index) }

func (s *Service) stopRun(index string) bool {
	s.mu.Lock()
	r, ok := s.runs[index]
	delete(s.runs, index)
	s.mu.Unlock()
	if ok {
		r.cancel()
		<-r.done
	}
	return ok
}

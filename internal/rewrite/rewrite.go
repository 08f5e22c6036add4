// Package rewrite keeps the durable state of TTL rewrites: background
// jobs that give the rows a feature already holds the expiry its changed
// TTL gives new rows (a list feature version's ttl, a shared table's
// default_ttl). A feature package owns its jobs, one meta kind each, and
// says what one batch of its rows is; this package stores each job's
// target, cursor and counts in store.MetaTable and runs the jobs batch
// after batch, so that a job survives a restart or a change of the
// process running it and resumes from its last cursor.
//
// A batch is idempotent: it sets each row's expiry to a value computed
// from the row and the job's target alone, so a batch run twice (by a
// process that lost its lease mid-batch, or again after a crash before its
// cursor was saved) writes what it wrote the first time. Saving the cursor
// is a compare-and-swap against the document the runner read, so a job
// restarted meanwhile (a new rewrite asked for) is never overwritten by
// the old one's progress.
package rewrite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// Job states.
const (
	// StateRunning: the job has rows left to visit.
	StateRunning = "running"
	// StateDone: every row was visited.
	StateDone = "done"
	// StateSuperseded: the TTL changed again, or the feature was deleted
	// or recreated, before the job finished; it stopped where it was.
	StateSuperseded = "superseded"
)

// Job is one rewrite's durable state.
type Job struct {
	// TTL is the target: the TTL the rows get.
	TTL time.Duration
	// Scope names what the job rewrites beyond its key (a list version's
	// physical table, a shared table's generation), so that a job is
	// never resumed over a feature deleted and created again.
	Scope string
	// Cursor is where the next batch starts, opaque to this package; nil
	// before the first batch.
	Cursor []byte
	// State is StateRunning, StateDone or StateSuperseded.
	State string
	// Scanned counts rows visited; Rewritten those given a new expiry;
	// Removed those deleted because their new expiry had passed;
	// Skipped those left as they were (already at the target, or whose
	// expiry the feature cannot attribute to the TTL).
	Scanned, Rewritten, Removed, Skipped int64
	// Started is when the job was asked for; Updated when its last batch
	// was saved; Finished when it ended (zero while running).
	Started, Updated, Finished time.Time
}

// Active reports whether the job has rows left to visit.
func (j Job) Active() bool { return j.State == StateRunning }

// doc is a Job's meta document.
type doc struct {
	TTL       int64     `json:"ttl_ms"`
	Scope     string    `json:"scope"`
	Cursor    []byte    `json:"cursor,omitempty"`
	State     string    `json:"state"`
	Scanned   int64     `json:"scanned"`
	Rewritten int64     `json:"rewritten"`
	Removed   int64     `json:"removed"`
	Skipped   int64     `json:"skipped"`
	Started   time.Time `json:"started"`
	Updated   time.Time `json:"updated"`
	Finished  time.Time `json:"finished,omitzero"`
}

func encode(j Job) ([]byte, error) {
	return json.Marshal(doc{
		TTL: j.TTL.Milliseconds(), Scope: j.Scope, Cursor: j.Cursor, State: j.State,
		Scanned: j.Scanned, Rewritten: j.Rewritten, Removed: j.Removed, Skipped: j.Skipped,
		Started: j.Started, Updated: j.Updated, Finished: j.Finished,
	})
}

func decode(b []byte) (Job, error) {
	var d doc
	if err := json.Unmarshal(b, &d); err != nil {
		return Job{}, store.Wrapf(store.ErrStorageFault, err, "rewrite: malformed job record")
	}
	return Job{
		TTL: time.Duration(d.TTL) * time.Millisecond, Scope: d.Scope, Cursor: d.Cursor, State: d.State,
		Scanned: d.Scanned, Rewritten: d.Rewritten, Removed: d.Removed, Skipped: d.Skipped,
		Started: d.Started, Updated: d.Updated, Finished: d.Finished,
	}, nil
}

// Jobs is the set of one feature's jobs: the documents of one meta kind,
// one per key.
type Jobs struct {
	Meta store.Meta
	Kind string
}

// Start records a new job for key with the given target and scope,
// replacing any job the key had (running or not): the new one starts
// from the first row.
func (s Jobs) Start(ctx context.Context, key string, ttl time.Duration, scope string, now time.Time) (Job, error) {
	now = now.UTC().Truncate(time.Millisecond)
	j := Job{TTL: ttl, Scope: scope, State: StateRunning, Started: now, Updated: now}
	b, err := encode(j)
	if err != nil {
		return Job{}, err
	}
	if err := s.Meta.Put(ctx, s.Kind, key, b); err != nil {
		return Job{}, fmt.Errorf("rewrite: record job: %w", err)
	}
	return j, nil
}

// Get returns key's job, and false when it has none.
func (s Jobs) Get(ctx context.Context, key string) (Job, bool, error) {
	b, err := s.Meta.Get(ctx, s.Kind, key)
	if errors.Is(err, store.ErrNotFound) {
		return Job{}, false, nil
	}
	if err != nil {
		return Job{}, false, fmt.Errorf("rewrite: read job: %w", err)
	}
	j, err := decode(b)
	return j, err == nil, err
}

// Delete forgets key's job; a missing one is not an error.
func (s Jobs) Delete(ctx context.Context, key string) error {
	if err := s.Meta.Delete(ctx, s.Kind, key); err != nil {
		return fmt.Errorf("rewrite: delete job: %w", err)
	}
	return nil
}

// Batch visits the rows of one batch of key's job from j.Cursor on: it
// rewrites them, adds to j's counts and sets j.Cursor to where the next
// batch starts, or j.State to StateDone when no row follows (or to
// StateSuperseded when the job no longer applies). It must be idempotent.
type Batch func(ctx context.Context, key string, j *Job) error

// RunOptions says how Run runs a feature's jobs.
type RunOptions struct {
	// Batch is the feature's batch. Required.
	Batch Batch
	// Fence, if set, is called before each batch: an error (the lease
	// was lost) ends Run before the batch writes anything.
	Fence func(context.Context) error
	// Now is the clock of the saved times. Required.
	Now func() time.Time
	// Saved, if set, is called after each batch is saved with the job
	// before and after it, for metrics and logs.
	Saved func(key string, before, after Job)
	// Settle is how long after its start a job's first batch waits: the
	// staleness bound of the caches of other processes, which may still
	// write under the old TTL until then.
	Settle time.Duration
}

// Run runs every active job of the kind, each to its end, batch after
// batch, saving each job after each batch. It returns when no active job
// is left, or with the first error (the caller's loop retries). A job
// restarted or deleted while its batch ran keeps the newer record: the
// batch's progress is dropped and Run goes on with the next job, which
// the next Run picks up.
func (s Jobs) Run(ctx context.Context, o RunOptions) error {
	docs, err := s.Meta.List(ctx, s.Kind)
	if err != nil {
		return fmt.Errorf("rewrite: list jobs: %w", err)
	}
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		old := docs[key]
		j, err := decode(old)
		if err != nil {
			return err
		}
		for j.Active() {
			if o.Fence != nil {
				if err := o.Fence(ctx); err != nil {
					return err
				}
			}
			if j.Cursor == nil && j.Scanned == 0 {
				wait := min(o.Settle, j.Started.Add(o.Settle).Sub(o.Now()))
				if err := backoff.Sleep(ctx, wait); err != nil {
					return err
				}
			}
			before := j
			if err := o.Batch(ctx, key, &j); err != nil {
				return fmt.Errorf("rewrite: %s %s: %w", s.Kind, key, err)
			}
			j.Updated = o.Now().UTC().Truncate(time.Millisecond)
			if !j.Active() {
				j.Finished, j.Cursor = j.Updated, nil
			}
			b, err := encode(j)
			if err != nil {
				return err
			}
			err = s.Meta.CompareAndSwap(ctx, s.Kind, key, old, b)
			if errors.Is(err, store.ErrConflict) {
				break // restarted or deleted meanwhile: the newer record wins
			}
			if err != nil {
				return fmt.Errorf("rewrite: save %s %s: %w", s.Kind, key, err)
			}
			old = b
			if o.Saved != nil {
				o.Saved(key, before, j)
			}
		}
	}
	return nil
}

// ErrFenceLost is what a fence made by FenceAfter fails with.
var ErrFenceLost = errors.New("rewrite: lease lost")

// FenceAfter returns a fence that holds n times and then fails with
// ErrFenceLost, as a lease lost after n batches would: tests stop a job
// between its batches with it. It is safe for one Run at a time.
func FenceAfter(n int) func(context.Context) error {
	return func(context.Context) error {
		if n--; n < 0 {
			return ErrFenceLost
		}
		return nil
	}
}

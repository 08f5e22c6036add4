package rewrite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/rewrite"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestRun runs jobs of three batches each: one stopped by its fence after
// a batch resumes from its cursor, and one asked for again while its
// batch runs keeps the newer record, which the next Run starts over.
func TestRun(t *testing.T) {
	ctx := t.Context()
	clock := storetest.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	meta := store.Meta{S: testbackend.Pebble(t, clock.Now)}
	if err := meta.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	jobs := rewrite.Jobs{Meta: meta, Kind: "test_rewrite"}
	if _, err := jobs.Start(ctx, "a", time.Hour, "s", clock.Now()); err != nil {
		t.Fatal(err)
	}
	// Each batch visits one row; the third ends the job.
	var restart func()
	batch := func(_ context.Context, key string, j *rewrite.Job) error {
		j.Scanned++
		j.Rewritten++
		j.Cursor = append(j.Cursor, 'x')
		if len(j.Cursor) == 3 {
			j.State = rewrite.StateDone
		}
		if restart != nil {
			restart()
			restart = nil
		}
		return nil
	}
	run := func(fence func(context.Context) error) error {
		return jobs.Run(ctx, rewrite.RunOptions{Batch: batch, Fence: fence, Now: clock.Now})
	}
	if err := run(rewrite.FenceAfter(1)); !errors.Is(err, rewrite.ErrFenceLost) {
		t.Fatalf("run stopped by its fence: %v", err)
	}
	if j, ok, err := jobs.Get(ctx, "a"); err != nil || !ok || !j.Active() || string(j.Cursor) != "x" || j.Scanned != 1 {
		t.Fatalf("job after one batch: %+v %v %v", j, ok, err)
	}
	if err := run(nil); err != nil {
		t.Fatal(err)
	}
	j, _, _ := jobs.Get(ctx, "a")
	if j.Active() || j.State != rewrite.StateDone || j.Scanned != 3 || j.Cursor != nil || j.Finished.IsZero() {
		t.Fatalf("job at its end: %+v", j)
	}

	// Asked for again during its first batch: that batch's progress is
	// dropped, and the new job runs from the start.
	if _, err := jobs.Start(ctx, "a", time.Minute, "s", clock.Now()); err != nil {
		t.Fatal(err)
	}
	restart = func() {
		if _, err := jobs.Start(ctx, "a", 2*time.Minute, "s", clock.Now()); err != nil {
			t.Error(err)
		}
	}
	if err := run(nil); err != nil {
		t.Fatal(err)
	}
	if j, _, _ := jobs.Get(ctx, "a"); j.TTL != 2*time.Minute || !j.Active() || j.Scanned != 0 {
		t.Fatalf("job asked for again meanwhile: %+v", j)
	}
	if err := run(nil); err != nil {
		t.Fatal(err)
	}
	if j, _, _ := jobs.Get(ctx, "a"); j.TTL != 2*time.Minute || j.State != rewrite.StateDone || j.Scanned != 3 {
		t.Fatalf("the newer job at its end: %+v", j)
	}
	if err := jobs.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := jobs.Get(ctx, "a"); ok || err != nil {
		t.Fatalf("a deleted job: %v %v", ok, err)
	}
}

package migrate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

var hourly = timeseries.Config{Name: "ev", TableBucket: 6 * time.Hour, PartitionBucket: time.Hour, Retention: 24 * time.Hour, Runway: 2}

type fixture struct {
	clock *storetest.Clock
	st    store.Store
	idx   *timeseries.Service
	svc   *Service
	src   *TableSource
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{clock: storetest.NewClock(time.Now().Truncate(time.Millisecond))}
	f.st = testbackend.Pebble(t, f.clock.Now)
	var err error
	if f.idx, err = timeseries.New(ctx, f.st, timeseries.Options{Now: f.clock.Now}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.idx.Create(ctx, hourly); err != nil {
		t.Fatal(err)
	}
	opts.Now = f.clock.Now
	if f.svc, err = New(ctx, f.st, f.idx, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.svc.Close() })
	if _, _, err := f.svc.Start(ctx, "ev", Settings{Legacy: LegacyConfig{Kind: KindTable, Table: "legacy_ev"}, WriteLegacy: true}); err != nil {
		t.Fatal(err)
	}
	if f.src, err = OpenTable(ctx, f.st, "legacy_ev"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) seed(t *testing.T, n int, prefix string) []Row {
	t.Helper()
	now := f.clock.Now()
	rows := make([]Row, n)
	for i := range rows {
		ts := now.Add(-20 * time.Hour).Add(time.Duration(i) * time.Second)
		rows[i] = Row{Event: timeseries.Event{IndexID: fmt.Sprintf("id%d", i%5), EventID: fmt.Sprintf("%s%05d", prefix, i), Timestamp: ts, Payload: []byte{byte(i)}}, ExpiresAt: ts.Add(24 * time.Hour)}
	}
	if err := f.src.Write(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// shardRows counts the rows the shards hold.
func (f *fixture) shardRows(t *testing.T) int {
	t.Helper()
	n := 0
	for i := range 5 {
		q := timeseries.Query{IndexID: fmt.Sprintf("id%d", i), Limit: 10000}
		for {
			p, err := f.idx.QueryShards(t.Context(), "ev", q)
			if err != nil {
				t.Fatal(err)
			}
			n += len(p.Events)
			if p.NextPageToken == nil {
				break
			}
			q.PageToken = p.NextPageToken
		}
	}
	return n
}

// TestBackfillResumes kills a backfill between copying a batch and
// checkpointing it, and restarts it: it resumes from the checkpoint, and
// copies nothing twice beyond that one batch.
func TestBackfillResumes(t *testing.T) {
	f := newFixture(t, Options{})
	const n, batch = 5000, 300
	f.seed(t, n, "e")
	ctx, kill := context.WithCancel(t.Context())
	steps := 0
	cp, err := f.svc.Backfill(ctx, "ev", BackfillOptions{BatchSize: batch, beforeSave: func() {
		if steps++; steps == 7 {
			kill() // the 7th batch is copied, its checkpoint never saved
		}
	}})
	if err == nil {
		t.Fatal("killed backfill returned no error")
	}
	saved, _, err := f.svc.loadCheckpoint(t.Context(), "ev")
	if err != nil {
		t.Fatal(err)
	}
	if saved.Done || saved.Scanned != 6*batch || saved.Copied != 6*batch || saved.Cursor == nil {
		t.Fatalf("checkpoint after the kill: %+v", saved)
	}
	if got := f.shardRows(t); got != 7*batch {
		t.Fatalf("shards hold %d rows after the kill, want %d", got, 7*batch)
	}
	// Restarted: it resumes at the 7th batch, which it copies again.
	rescanned := int64(0)
	cp, err = f.svc.Backfill(t.Context(), "ev", BackfillOptions{BatchSize: batch, Progress: func(c Checkpoint) {
		if rescanned == 0 {
			rescanned = c.Scanned
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rescanned != 7*batch {
		t.Fatalf("the restarted run's first step ended at %d rows scanned, want %d: it did not resume", rescanned, 7*batch)
	}
	copiedRuns := int64(7*batch) + (cp.Copied - 6*batch) // first run's copies + second's
	if !cp.Done || cp.Copied != n || cp.Pass != 1 || copiedRuns-n > batch {
		t.Fatalf("after the restart: %+v; rows copied over both runs %d, want at most %d", cp, copiedRuns, n+batch)
	}
	if got := f.shardRows(t); got != n {
		t.Fatalf("shards hold %d rows, want %d", got, n)
	}
	// A completed pass is not resumed: the next one starts over.
	cp, err = f.svc.Backfill(t.Context(), "ev", BackfillOptions{DryRun: true})
	if err != nil || cp.Pass != 2 || cp.Copied != 0 || cp.Scanned != n || cp.LastCopy == nil {
		t.Fatalf("dry run after a completed pass: %+v, %v", cp, err)
	}
	if live := cp.Census.liveAt(f.clock.Now()); live != n {
		t.Fatalf("census counts %d live rows, want %d", live, n)
	}
	if live := cp.Census.liveAt(f.clock.Now().Add(25 * time.Hour)); live != 0 {
		t.Fatalf("census counts %d rows live after their TTL, want 0", live)
	}
}

// TestBackfillRate keeps a backfill within its rows per second, waiting
// on the fake clock.
func TestBackfillRate(t *testing.T) {
	var waited time.Duration
	var f *fixture
	f = newFixture(t, Options{Wait: func(_ context.Context, d time.Duration) error {
		waited += d
		f.clock.Advance(d)
		return nil
	}})
	f.seed(t, 1000, "e")
	cp, err := f.svc.Backfill(t.Context(), "ev", BackfillOptions{BatchSize: 100, RowsPerSecond: 200})
	if err != nil {
		t.Fatal(err)
	}
	// 1000 rows at 200/s: 5 s, of which the last batch needs no wait.
	if waited != 4500*time.Millisecond || cp.Scanned != 1000 {
		t.Fatalf("waited %s for %d rows at 200/s, want 4.5s", waited, cp.Scanned)
	}
}

// TestMergedReadPartialOverlap merges a legacy table and shards that each
// hold events the other lacks, and some in common with different
// payloads: every event once, in order, with the shards' copy, for any
// page size.
func TestMergedReadPartialOverlap(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, Options{})
	rows := f.seed(t, 300, "e")
	// The shards hold rows 200..399: 100 in common, 100 of their own.
	var events []timeseries.Event
	for i := 200; i < 400; i++ {
		ts := f.clock.Now().Add(-20 * time.Hour).Add(time.Duration(i) * time.Second)
		events = append(events, timeseries.Event{IndexID: fmt.Sprintf("id%d", i%5), EventID: fmt.Sprintf("e%05d", i), Timestamp: ts, Payload: []byte("shard")})
	}
	if _, err := f.idx.PutShards(ctx, "ev", events); err != nil {
		t.Fatal(err)
	}
	_ = rows
	for _, p := range []Phase{ShadowRead, MergedRead} {
		if _, err := f.svc.SetPhase(ctx, "ev", p, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, desc := range []bool{false, true} {
		for _, limit := range []int{1, 2, 7, 80, 10000} {
			q := timeseries.Query{IndexID: "id3", Limit: limit, Desc: desc}
			var got []timeseries.Event
			for {
				page, err := f.idx.Query(ctx, "ev", q)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Events) > limit {
					t.Fatalf("page of %d events, limit %d", len(page.Events), limit)
				}
				got = append(got, page.Events...)
				if page.NextPageToken == nil {
					break
				}
				q.PageToken = page.NextPageToken
			}
			if len(got) != 80 {
				t.Fatalf("limit %d desc %v: %d events, want 80", limit, desc, len(got))
			}
			for k, e := range got {
				i := 3 + 5*k
				if desc {
					i = 398 - 5*k
				}
				if e.EventID != fmt.Sprintf("e%05d", i) {
					t.Fatalf("limit %d desc %v: event %d is %s, want e%05d", limit, desc, k, e.EventID, i)
				}
				if (i >= 200) != (string(e.Payload) == "shard") {
					t.Fatalf("event %s has payload %q", e.EventID, e.Payload)
				}
			}
		}
	}
}

// TestShadowReadCounts compares sampled reads and keeps the mismatching
// keys.
func TestShadowReadCounts(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, Options{MismatchSample: 3})
	f.seed(t, 10, "e") // ids 0..4, two events each
	if _, _, err := f.svc.Start(ctx, "ev", Settings{Legacy: LegacyConfig{Kind: KindTable, Table: "legacy_ev"}, WriteLegacy: true, SamplePercent: 50}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetPhase(ctx, "ev", ShadowRead, false); err != nil {
		t.Fatal(err)
	}
	ts := f.clock.Now().Add(-time.Hour)
	// One event only in the shards, one in both with another payload.
	if _, err := f.idx.PutShards(ctx, "ev", []timeseries.Event{
		{IndexID: "id0", EventID: "x", Timestamp: ts, Payload: []byte("x")},
		{IndexID: "id0", EventID: "e00000", Timestamp: f.clock.Now().Add(-20 * time.Hour), Payload: []byte("other")},
	}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := f.idx.Query(ctx, "ev", timeseries.Query{IndexID: "id0", Limit: 100}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.svc.Status(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	c := st.Counters
	// Half of 4 reads compared; each finds e00005 missing, x extra and
	// e00000 different.
	if c.ReadsCompared != 2 || c.Mismatches[Missing] != 2 || c.Mismatches[Extra] != 2 || c.Mismatches[Different] != 2 || len(c.MismatchSample) != 3 {
		t.Fatalf("counters %+v", c)
	}
}

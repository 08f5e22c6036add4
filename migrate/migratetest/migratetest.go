// Package migratetest is the end-to-end test of a migration from a legacy
// table, run against every legacy source: a legacy table of events with
// native TTL, a concurrent writer throughout, and every phase in turn.
// It is for _test files only.
package migratetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// Env is what a run needs.
type Env struct {
	// Store holds the index's shards and ebb_meta; its expiry follows
	// Clock.
	Store store.Store
	Clock *storetest.Clock
	// Legacy names the legacy table; Open opens kinds other than
	// migrate.KindTable.
	Legacy migrate.LegacyConfig
	Open   migrate.Opener
	// Events is the legacy table's size; IDs how many index_ids share it.
	Events, IDs int
}

// EnvEvents sets the legacy table's size of the end-to-end tests that
// take it from Events; `make check` runs the DynamoDB one with 100,000.
const EnvEvents = "EBB_MIGRATE_E2E_EVENTS"

// Events returns the legacy table's size for an end-to-end test: the
// number in EnvEvents, or def.
func Events(t testing.TB, def int) int {
	t.Helper()
	if v := os.Getenv(EnvEvents); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			t.Fatalf("%s=%q: want a number >= 100", EnvEvents, v)
		}
		return n
	}
	return def
}

// key identifies an event in an index_id.
type key struct {
	id, event string
	ts        int64
}

// Run seeds the legacy table, migrates an index through every phase with
// a writer running through each change, and checks the view at each
// phase: every acknowledged event readable exactly once, in order, and
// nothing else.
func Run(t *testing.T, env Env) {
	ctx := t.Context()
	clock := env.Clock
	idx, err := timeseries.New(ctx, env.Store, timeseries.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg := timeseries.Config{Name: "ev", TableBucket: 6 * time.Hour, PartitionBucket: time.Hour, Retention: 24 * time.Hour, Runway: 2}
	if _, _, err := idx.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	svc, err := migrate.New(ctx, env.Store, idx, migrate.Options{Now: clock.Now, Open: env.Open})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })

	now := clock.Now()
	want := map[key][]byte{}
	var rows []migrate.Row
	expired, pastRetention := 0, 0
	var newestSeeded time.Time
	for i := range env.Events {
		id := fmt.Sprintf("acct_%03d", i%env.IDs)
		r := migrate.Row{Event: timeseries.Event{IndexID: id, EventID: fmt.Sprintf("old_%06d", i), Payload: []byte(fmt.Sprintf("p%d", i))}}
		switch i % 50 {
		case 7: // expired by its own TTL
			r.Timestamp = now.Add(-30 * time.Hour).Add(time.Duration(i) * time.Millisecond)
			r.ExpiresAt = r.Timestamp.Add(cfg.Retention)
			expired++
		case 13: // live by its TTL, past the index's retention
			r.Timestamp = now.Add(-25 * time.Hour).Add(time.Duration(i) * time.Millisecond)
			r.ExpiresAt = now.Add(2 * time.Hour)
			pastRetention++
		default: // spread over the last 23 hours
			r.Timestamp = now.Add(-23 * time.Hour).Add(time.Duration(i) * (23 * time.Hour / time.Duration(env.Events)))
			r.Timestamp = r.Timestamp.Truncate(time.Millisecond)
			r.ExpiresAt = r.Timestamp.Add(cfg.Retention)
			want[key{id, r.EventID, r.Timestamp.UnixMilli()}] = r.Payload
		}
		if i%50 != 7 && r.ExpiresAt.After(newestSeeded) {
			newestSeeded = r.ExpiresAt
		}
		rows = append(rows, r)
	}
	if _, _, err := svc.Start(ctx, "ev", migrate.Settings{Legacy: env.Legacy, WriteLegacy: true, SamplePercent: 100}); err != nil {
		t.Fatal(err)
	}
	st, err := svc.State(ctx, "ev")
	if err != nil || st.Phase != migrate.ShadowWrite {
		t.Fatalf("state after start: %+v, %v", st, err)
	}
	// An event's own ttl is refused before cutover, whole batch and all:
	// the legacy table keeps one TTL for every row.
	ttlBatch := []timeseries.Event{{IndexID: "acct_ttl", EventID: "plain", Timestamp: now}, {IndexID: "acct_ttl", EventID: "own", Timestamp: now, TTL: time.Hour}}
	if _, err := idx.WriteEvents(ctx, "ev", ttlBatch); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("events with a ttl during the migration: %v, want ErrInvalid", err)
	}
	// The legacy rows predate the migration: seed them behind ebb's back
	// (as the application wrote them), through the source itself.
	src, err := openSource(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := src.Write(ctx, rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d legacy rows (%d expired, %d past retention) in %s", len(rows), expired, pastRetention, time.Since(start).Round(time.Millisecond))

	var mu sync.Mutex
	seq := 0
	// write runs a writer through fn: batches of new events through the
	// index's usual Put, each acknowledged one added to want.
	write := func(fn func()) {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				var batch []timeseries.Event
				mu.Lock()
				for range 20 {
					seq++
					batch = append(batch, timeseries.Event{
						IndexID: fmt.Sprintf("acct_%03d", seq%env.IDs), EventID: fmt.Sprintf("new_%06d", seq),
						Timestamp: clock.Now().Add(-time.Duration(seq%3600) * time.Second).Truncate(time.Millisecond), Payload: []byte(fmt.Sprintf("n%d", seq)),
					})
				}
				mu.Unlock()
				if _, err := idx.WriteEvents(ctx, "ev", batch); err != nil {
					t.Errorf("put: %v", err)
					return
				}
				mu.Lock()
				for _, e := range batch {
					want[key{e.IndexID, e.EventID, e.Timestamp.UnixMilli()}] = e.Payload
				}
				mu.Unlock()
			}
		}()
		mu.Lock()
		first := seq
		mu.Unlock()
		fn()
		// At least a few batches land in each phase.
		for {
			mu.Lock()
			n := seq
			mu.Unlock()
			if n >= first+60 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(stop)
		<-done
	}
	phase := func(p migrate.Phase) {
		t.Helper()
		write(func() {
			if _, err := svc.SetPhase(ctx, "ev", p, false); err != nil {
				t.Fatalf("to %s: %v", p, err)
			}
		})
	}

	check := func(label string) map[key][]byte {
		t.Helper()
		start := time.Now()
		got := view(t, idx, env.IDs, 1000, false)
		if len(got) != len(want) {
			t.Fatalf("%s: view has %d events, want %d", label, len(got), len(want))
		}
		for k, p := range want {
			if string(got[k]) != string(p) {
				t.Fatalf("%s: event %+v reads %q, want %q", label, k, got[k], p)
			}
		}
		t.Logf("%s: %d events, each once, read in %s", label, len(got), time.Since(start).Round(time.Millisecond))
		return got
	}

	check("shadow-write")
	// The shards lack the legacy rows: cutover is refused.
	if _, err := svc.SetPhase(ctx, "ev", migrate.ShadowRead, false); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetPhase(ctx, "ev", migrate.Cutover, false); err == nil {
		t.Fatal("skipping to cutover was allowed")
	}
	check("shadow-read")
	status, err := svc.Status(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if status.Counters.Mismatches[migrate.Missing] == 0 {
		t.Fatalf("before backfill, shadow reads found no missing events: %+v", status.Counters)
	}

	// Backfill with the writer running.
	var cp migrate.Checkpoint
	write(func() {
		start := time.Now()
		cp, err = svc.Backfill(ctx, "ev", migrate.BackfillOptions{BatchSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("backfill: scanned %d, copied %d, expired %d, past retention %d, no shard %d in %s",
			cp.Scanned, cp.Copied, cp.SkippedExpired, cp.SkippedRetention, cp.SkippedNoShard, time.Since(start).Round(time.Millisecond))
	})
	if !cp.Done || cp.SkippedRetention != int64(pastRetention) || cp.SkippedExpired > int64(expired) || cp.Scanned < int64(len(rows)-expired) {
		t.Fatalf("backfill checkpoint %+v (want %d past retention, up to %d expired)", cp, pastRetention, expired)
	}
	before := status.Counters
	check("shadow-read after backfill")
	status, err = svc.Status(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{migrate.Missing, migrate.Extra, migrate.Different} {
		if d := status.Counters.Mismatches[k] - before.Mismatches[k]; d != 0 {
			t.Fatalf("after backfill, shadow reads found %d %s events: %+v", d, k, status.Counters.MismatchSample)
		}
	}
	if status.Counters.ReadsCompared <= before.ReadsCompared {
		t.Fatal("no shadow read compared after backfill")
	}
	if !status.CutoverReady {
		t.Fatalf("cutover not ready after backfill: %s", status.CutoverBlockedBy)
	}
	// The backfill's scan took a census of the legacy table: every live
	// seeded row, plus what ebb wrote there before the scan passed.
	mu.Lock()
	written := seq
	mu.Unlock()
	if live := status.LegacyLiveRows; live == nil || *live < int64(len(rows)-expired) || *live > int64(len(rows)-expired+written) {
		t.Fatalf("legacy rows still live: %v, want %d seeded plus up to %d written", live, len(rows)-expired, written)
	}
	if status.LegacyNewestExpiry.Before(newestSeeded.Add(-time.Second)) {
		t.Fatalf("legacy newest expiry %s, but a seeded row expires %s", status.LegacyNewestExpiry, newestSeeded)
	}
	phase(migrate.MergedRead)
	merged := check("merged-read")
	pages(t, idx, "acct_001")
	// Cutover with nothing written in between: the same answers as
	// merged-read; then with the writer again.
	if _, err := svc.SetPhase(ctx, "ev", migrate.Cutover, false); err != nil {
		t.Fatal(err)
	}
	cut := check("cutover")
	if len(cut) != len(merged) {
		t.Fatalf("cutover serves %d events, merged-read %d", len(cut), len(merged))
	}
	for k, p := range merged {
		if string(cut[k]) != string(p) {
			t.Fatalf("cutover reads %+v as %q, merged-read as %q", k, cut[k], p)
		}
	}
	write(func() {})
	check("cutover, after more writes")
	status, err = svc.Status(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if status.LegacyDeletable || status.LegacyNewestExpiry.IsZero() {
		t.Fatalf("at cutover the legacy table is deletable=%v, newest expiry %v", status.LegacyDeletable, status.LegacyNewestExpiry)
	}
	clock.Advance(cfg.Retention + 3*time.Hour)
	if status, err = svc.Status(ctx, "ev"); err != nil || !status.LegacyDeletable {
		t.Fatalf("a retention after cutover, the legacy table is not deletable: %+v, %v", status, err)
	}
}

func openSource(ctx context.Context, env Env) (migrate.Source, error) {
	if env.Legacy.Kind == migrate.KindTable {
		return migrate.OpenTable(ctx, env.Store, env.Legacy.Table)
	}
	return env.Open(ctx, env.Legacy)
}

// view reads every event of every index_id through the index's Query, by
// pages, checking order and that no event comes twice.
func view(t *testing.T, idx *timeseries.Service, ids, limit int, desc bool) map[key][]byte {
	t.Helper()
	out := map[key][]byte{}
	for i := range ids {
		id := fmt.Sprintf("acct_%03d", i)
		for _, e := range readAll(t, idx, id, limit, desc, 0) {
			out[key{id, e.EventID, e.Timestamp.UnixMilli()}] = e.Payload
		}
	}
	return out
}

// readAll reads id's events by pages of limit, all of them, or the first
// pages holding at least upTo when upTo > 0.
func readAll(t *testing.T, idx *timeseries.Service, id string, limit int, desc bool, upTo int) []timeseries.Event {
	t.Helper()
	var all []timeseries.Event
	q := timeseries.Query{IndexID: id, Limit: limit, Desc: desc}
	for range 100000 {
		page, err := idx.Query(t.Context(), "ev", q)
		if err != nil {
			t.Fatalf("query %s: %v", id, err)
		}
		all = append(all, page.Events...)
		if page.NextPageToken == nil || (upTo > 0 && len(all) >= upTo) {
			break
		}
		q.PageToken = page.NextPageToken
	}
	for i := 1; i < len(all); i++ {
		c := cmp.Or(all[i-1].Timestamp.Compare(all[i].Timestamp), strings.Compare(all[i-1].EventID, all[i].EventID))
		if desc {
			c = -c
		}
		if c >= 0 {
			t.Fatalf("%s: events %d and %d out of order or repeated: %v %s, %v %s", id, i-1, i, all[i-1].Timestamp, all[i-1].EventID, all[i].Timestamp, all[i].EventID)
		}
	}
	return all
}

// smallPagesUpTo bounds the events read by small pages, and so the
// requests, whatever the table's size.
const smallPagesUpTo = 600

// pages reads one index_id with several page sizes in both orders: the
// same events each time, in the same order. Small pages read the first
// smallPagesUpTo events of each order.
func pages(t *testing.T, idx *timeseries.Service, id string) {
	t.Helper()
	start := time.Now()
	ref := readAll(t, idx, id, 10000, false, 0)
	for _, desc := range []bool{false, true} {
		want := slices.Clone(ref)
		if desc {
			slices.Reverse(want)
		}
		for _, n := range []int{1, 2, 7, 10000} {
			upTo := smallPagesUpTo
			if n == 10000 {
				upTo = 0
			}
			got := readAll(t, idx, id, n, desc, upTo)
			if len(got) > len(want) || (len(got) < len(want) && (upTo == 0 || len(got) < upTo)) {
				t.Fatalf("%s, limit %d, desc %v: %d events, want %d", id, n, desc, len(got), len(want))
			}
			for i, e := range got {
				if e.EventID != want[i].EventID || !e.Timestamp.Equal(want[i].Timestamp) {
					t.Fatalf("%s, limit %d, desc %v: event %d is %s@%v, want %s@%v", id, n, desc, i, e.EventID, e.Timestamp, want[i].EventID, want[i].Timestamp)
				}
			}
		}
	}
	t.Logf("paged through %s (%d events) at several page sizes in %s", id, len(ref), time.Since(start).Round(time.Millisecond))
}

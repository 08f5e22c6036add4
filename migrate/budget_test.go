package migrate

import (
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// TestMergedReadAcrossBudgetStops merges a legacy table and shards whose
// reads stop at a budget of two partitions: a page of the shards then
// ends at a partition's edge, often with no event, and the merged page
// must hold no legacy event beyond that edge (the shards have not looked
// there yet) and resume from it. Paging returns every event once, in
// order, with the shards' copy where both hold one; and a shadow read
// counts no event beyond the shards' stop as missing.
func TestMergedReadAcrossBudgetStops(t *testing.T) {
	ctx := t.Context()
	clock := storetest.NewClock(time.Now().Truncate(time.Hour))
	st := testbackend.Pebble(t, clock.Now)
	idx, err := timeseries.New(ctx, st, timeseries.Options{Now: clock.Now, MaxPartitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := idx.Create(ctx, hourly); err != nil {
		t.Fatal(err)
	}
	svc, err := New(ctx, st, idx, Options{Now: clock.Now, MismatchSample: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	if _, _, err := svc.Start(ctx, "ev", Settings{Legacy: LegacyConfig{Kind: KindTable, Table: "legacy_ev"}, SamplePercent: 100}); err != nil {
		t.Fatal(err)
	}
	src, err := OpenTable(ctx, st, "legacy_ev")
	if err != nil {
		t.Fatal(err)
	}
	// Every 37 minutes over 20 hours: legacy only, shards only, or both
	// (with the shards' payload winning).
	var legacy []Row
	var shards []timeseries.Event
	var want []string
	start := clock.Now().Add(-20 * time.Hour)
	for i := range 32 {
		ts := start.Add(time.Duration(i) * 37 * time.Minute)
		e := timeseries.Event{IndexID: "a", EventID: fmt.Sprintf("e%02d", i), Timestamp: ts}
		if i%3 != 1 {
			l := e
			l.Payload = []byte("legacy")
			legacy = append(legacy, Row{Event: l, ExpiresAt: ts.Add(hourly.Retention)})
		}
		if i%3 != 0 {
			s := e
			s.Payload = []byte("shard")
			shards = append(shards, s)
		}
		want = append(want, e.EventID)
	}
	if err := src.Write(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.PutShards(ctx, "ev", shards); err != nil {
		t.Fatal(err)
	}

	pageAll := func(q timeseries.Query) []timeseries.Event {
		var got []timeseries.Event
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatal("paging does not end")
			}
			page, err := idx.Query(ctx, "ev", q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page.Events...)
			if page.NextPageToken == nil {
				return got
			}
			q.PageToken = page.NextPageToken
		}
	}

	if _, err := svc.SetPhase(ctx, "ev", ShadowRead, false); err != nil {
		t.Fatal(err)
	}
	pageAll(timeseries.Query{IndexID: "a", Limit: 5})
	status, err := svc.Status(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	// A shadow read compares only up to where both reads stopped, so it
	// may count fewer than the 11 legacy-only (missing), 10 shard-only
	// (extra) and 11 different events; but each one it counts must be
	// one.
	c := status.Counters
	if c.Mismatches[Missing] > 11 || c.Mismatches[Extra] > 10 || c.Mismatches[Different] > 11 || len(c.MismatchSample) == 0 {
		t.Fatalf("shadow reads across budget stops counted %v, at most 11 missing, 10 extra, 11 different", c.Mismatches)
	}
	for _, m := range c.MismatchSample {
		var i int
		if _, err := fmt.Sscanf(m.EventID, "e%02d", &i); err != nil {
			t.Fatal(err)
		}
		// i % 3: 0 legacy only, 1 shards only, 2 both.
		if want := [3]string{Missing, Extra, Different}[i%3]; m.Kind != want {
			t.Fatalf("%s counted %s, want %s", m.EventID, m.Kind, want)
		}
	}

	if _, err := svc.SetPhase(ctx, "ev", MergedRead, false); err != nil {
		t.Fatal(err)
	}
	for _, desc := range []bool{false, true} {
		for _, limit := range []int{1, 3, 100} {
			got := pageAll(timeseries.Query{IndexID: "a", Limit: limit, Desc: desc})
			if len(got) != len(want) {
				t.Fatalf("desc %v limit %d: %d events, want %d: %v", desc, limit, len(got), len(want), got)
			}
			for k, e := range got {
				i := k
				if desc {
					i = len(want) - 1 - k
				}
				if e.EventID != want[i] {
					t.Fatalf("desc %v limit %d: event %d is %s, want %s", desc, limit, k, e.EventID, want[i])
				}
				if inShards := i%3 != 0; inShards != (string(e.Payload) == "shard") {
					t.Fatalf("event %s has payload %q", e.EventID, e.Payload)
				}
			}
		}
	}
}

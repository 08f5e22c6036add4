package timeseries

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// eraseFixture writes an event every 7 minutes over the 5 hours before t0
// for acc_1 and acc_2, and returns them by index_id.
func eraseFixture(t *testing.T, svc *Service) map[string][]Event {
	t.Helper()
	out := map[string][]Event{}
	for _, id := range []string{"acc_1", "acc_2"} {
		var batch []Event
		for ts := t0.Add(-5 * time.Hour); ts.Before(t0); ts = ts.Add(7 * time.Minute) {
			batch = append(batch, ev(id, "e"+ts.Format("150405"), ts, "p"))
		}
		if _, err := svc.WriteEvents(context.Background(), "ev", batch); err != nil {
			t.Fatal(err)
		}
		out[id] = batch
	}
	return out
}

// between returns the events of es with timestamps in [from, to).
func between(es []Event, from, to time.Time) []Event {
	var out []Event
	for _, e := range es {
		if !e.Timestamp.Before(from) && e.Timestamp.Before(to) {
			out = append(out, e)
		}
	}
	return out
}

func eventIDs(es []Event) string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.EventID
	}
	return strings.Join(ids, ",")
}

func TestEraseEvents(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, reg := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		all := eraseFixture(t, svc)
		q := Query{IndexID: "acc_1", Limit: 1000}

		// A range whose edges cut partitions (10 min) and shards (1 h):
		// whole partitions go at once, the edges row by row.
		from, to := t0.Add(-4*time.Hour+3*time.Minute), t0.Add(-2*time.Hour+25*time.Minute)
		inRange := between(all["acc_1"], from, to)
		var progress []EraseProgress
		res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "acc_1", From: from, To: to, Progress: func(p EraseProgress) { progress = append(progress, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Removed != int64(len(inRange)) || res.Shards != 3 {
			t.Fatalf("range erase: %+v, want %d removed from 3 shards", res, len(inRange))
		}
		if len(progress) != 3 || progress[2].Done != 3 || progress[2].Total != 3 || progress[2].TotalRemoved != res.Removed {
			t.Fatalf("progress %+v", progress)
		}
		var sum int64
		for _, p := range progress {
			sum += p.Removed
		}
		if sum != res.Removed {
			t.Errorf("progress removes %d in all, result %d", sum, res.Removed)
		}
		want := append(between(all["acc_1"], t0.Add(-5*time.Hour), from), between(all["acc_1"], to, t0)...)
		if got := queryAll(t, svc, q); eventIDs(got) != eventIDs(want) {
			t.Fatalf("after the range erase acc_1 holds %s\nwant %s", eventIDs(got), eventIDs(want))
		}
		if got := queryAll(t, svc, Query{IndexID: "acc_2", Limit: 1000}); eventIDs(got) != eventIDs(all["acc_2"]) {
			t.Fatalf("acc_2 changed: %s", eventIDs(got))
		}

		// Idempotent: the same erase again removes nothing.
		if res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "acc_1", From: from, To: to}); err != nil || res.Removed != 0 || res.Shards != 3 {
			t.Fatalf("second erase: %+v, %v", res, err)
		}

		// One event, by its key; a second time it is gone already.
		one := all["acc_2"][5]
		if res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "acc_2", Timestamp: one.Timestamp, EventID: one.EventID}); err != nil || res.Removed != 1 || res.Shards != 1 {
			t.Fatalf("erase one: %+v, %v", res, err)
		}
		if res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "acc_2", Timestamp: one.Timestamp, EventID: one.EventID}); err != nil || res.Removed != 0 {
			t.Fatalf("erase one again: %+v, %v", res, err)
		}
		rest := append(append([]Event{}, all["acc_2"][:5]...), all["acc_2"][6:]...)
		if got := queryAll(t, svc, Query{IndexID: "acc_2", Limit: 1000}); eventIDs(got) != eventIDs(rest) {
			t.Fatalf("after erasing one, acc_2 holds %s", eventIDs(got))
		}
		// One event in a time no shard covers is not there: nothing to do.
		if res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "acc_2", Timestamp: t0.Add(-1000 * time.Hour), EventID: "x"}); err != nil || res.Removed != 0 || res.Shards != 0 {
			t.Fatalf("erase one without a shard: %+v, %v", res, err)
		}

		// Everything of acc_1, in every shard (6 past, the hot one, 2 ahead).
		res, err = svc.EraseEvents(ctx, "ev", Erase{IndexID: "acc_1"})
		if err != nil || res.Removed != int64(len(want)) || res.Shards != 9 {
			t.Fatalf("erase all: %+v, %v; want %d removed from 9 shards", res, err, len(want))
		}
		if got := queryAll(t, svc, q); len(got) != 0 {
			t.Fatalf("acc_1 still holds %s", eventIDs(got))
		}
		if got := queryAll(t, svc, Query{IndexID: "acc_2", Limit: 1000}); eventIDs(got) != eventIDs(rest) {
			t.Fatalf("erasing acc_1 changed acc_2: %s", eventIDs(got))
		}
		total := int64(len(inRange) + len(want) + 1)
		if v := metricValue(t, reg, "ebb_index_events_erased_total", "ev"); v != float64(total) {
			t.Errorf("ebb_index_events_erased_total %v, want %d", v, total)
		}
	})
}

func TestEraseRefusesBadRequests(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		all := eraseFixture(t, svc)
		ts := all["acc_1"][0].Timestamp
		for name, e := range map[string]Erase{
			"no index_id":           {},
			"from after to":         {IndexID: "acc_1", From: t0, To: t0.Add(-time.Hour)},
			"from equals to":        {IndexID: "acc_1", From: t0, To: t0},
			"event_id without time": {IndexID: "acc_1", EventID: all["acc_1"][0].EventID},
			"timestamp without id":  {IndexID: "acc_1", Timestamp: ts},
			"one event and a range": {IndexID: "acc_1", Timestamp: ts, EventID: all["acc_1"][0].EventID, From: ts},
			"index_id not UTF-8":    {IndexID: "\xff"},
			"timestamp before 1970": {IndexID: "acc_1", Timestamp: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), EventID: "x"},
			"event_id too long":     {IndexID: "acc_1", Timestamp: ts, EventID: strings.Repeat("x", MaxIDBytes+1)},
		} {
			if res, err := svc.EraseEvents(ctx, "ev", e); !errors.Is(err, store.ErrInvalid) || res != (EraseResult{}) {
				t.Errorf("%s: %+v, %v; want ErrInvalid", name, res, err)
			}
		}
		if _, err := svc.EraseEvents(ctx, "nope", Erase{IndexID: "acc_1"}); !errors.Is(err, ErrIndexNotFound) || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown index: %v", err)
		}
		if got := queryAll(t, svc, Query{IndexID: "acc_1", Limit: 1000}); eventIDs(got) != eventIDs(all["acc_1"]) {
			t.Fatalf("a refused erase removed events: %s", eventIDs(got))
		}
	})
}

// TestEraseRacingWrites erases an index_id while another goroutine keeps
// writing to the same partitions: every event acknowledged before the
// erase began is gone when it returns, and every event written after it
// returned is kept.
func TestEraseRacingWrites(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		before := eraseFixture(t, svc)["acc_1"]
		from := t0.Add(-5 * time.Hour)

		stop, started := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		var writeErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e := ev("acc_1", fmt.Sprintf("racing_%d", i), from.Add(time.Duration(i%300)*time.Minute), "r")
				_, err := svc.WriteEvents(ctx, "ev", []Event{e})
				if i == 0 {
					close(started) // the race is on before the erase begins
				}
				if err != nil {
					writeErr = err
					return
				}
			}
		}()
		<-started
		res, err := svc.EraseEvents(ctx, "ev", Erase{IndexID: "acc_1", From: from, To: t0})
		close(stop)
		wg.Wait()
		if err != nil || writeErr != nil {
			t.Fatalf("erase: %v; racing write: %v", err, writeErr)
		}
		if res.Removed < int64(len(before)) {
			t.Errorf("removed %d, fewer than the %d events written before the erase", res.Removed, len(before))
		}
		left := queryAll(t, svc, Query{IndexID: "acc_1", Limit: 10000})
		for _, e := range left {
			if !strings.HasPrefix(e.EventID, "racing_") {
				t.Fatalf("event %s, written before the erase, survived it", e.EventID)
			}
		}

		// Written after the erase returned: kept.
		after := []Event{ev("acc_1", "after_1", from.Add(time.Minute), "a"), ev("acc_1", "after_2", t0.Add(-time.Minute), "a")}
		if _, err := svc.WriteEvents(ctx, "ev", after); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, e := range queryAll(t, svc, Query{IndexID: "acc_1", Limit: 10000}) {
			got[e.EventID] = true
		}
		if !got["after_1"] || !got["after_2"] {
			t.Fatalf("events written after the erase are missing: %v", got)
		}
	})
}

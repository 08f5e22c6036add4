package timeseries

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestPutReusesItsBuffers: Put builds its mutations in buffers that later
// Puts reuse, with interfaces pointing into them. Batches of growing and
// shrinking sizes, with nil, empty and shared payloads, written one after
// another and from several goroutines at once, must each land exactly as
// given, and a rewrite of an event must replace it.
func TestPutReusesItsBuffers(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)

		shared := []byte("shared payload")
		batch := func(worker, size int, payload func(i int) []byte) []Event {
			out := make([]Event, size)
			for i := range out {
				// Two ids and two hours (so two shards per batch, in
				// interleaved order), distinct timestamps per worker.
				ts := t0.Add(-time.Duration(i%2) * time.Hour).Add(-time.Duration(worker*1000+i) * time.Millisecond)
				out[i] = Event{IndexID: fmt.Sprintf("id%d", i%2), EventID: fmt.Sprintf("w%d-e%d", worker, i), Timestamp: ts, Payload: payload(i)}
			}
			return out
		}
		want := map[string]Event{} // by event id
		put := func(events []Event) {
			t.Helper()
			if n, err := svc.Put(ctx, "ev", events); err != nil || n != len(events) {
				t.Fatalf("put %d events: %d, %v", len(events), n, err)
			}
		}

		// Sequential batches: large, small, large again, so that a reused
		// buffer is longer than the batch and then grown.
		for round, size := range []int{40, 3, 70} {
			events := batch(round, size, func(i int) []byte {
				switch i % 3 {
				case 0:
					return nil
				case 1:
					return shared
				}
				return fmt.Appendf(nil, "r%d-p%d", round, i)
			})
			put(events)
			for _, e := range events {
				want[e.EventID] = e
			}
		}
		// A rewrite of the first event replaces its payload.
		first := batch(0, 1, func(int) []byte { return []byte("rewritten") })
		put(first)
		want[first[0].EventID] = first[0]

		// Concurrent batches, each taking its own buffer.
		var wg sync.WaitGroup
		var mu sync.Mutex
		errs := make(chan error, 4)
		for w := 10; w < 14; w++ {
			events := batch(w, 25+w, func(i int) []byte { return fmt.Appendf(nil, "w%d-p%d", w, i) })
			wg.Go(func() {
				if _, err := svc.Put(ctx, "ev", events); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, e := range events {
					want[e.EventID] = e
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}

		got := map[string]Event{}
		for _, id := range []string{"id0", "id1"} {
			for _, e := range queryAll(t, svc, Query{IndexID: id, Limit: 1000}) {
				if e.IndexID != id {
					t.Fatalf("query for %s returned an event of %s", id, e.IndexID)
				}
				if _, dup := got[e.EventID]; dup {
					t.Fatalf("event %s returned twice", e.EventID)
				}
				got[e.EventID] = e
			}
		}
		if len(got) != len(want) {
			t.Fatalf("read %d events, wrote %d", len(got), len(want))
		}
		for id, w := range want {
			g := got[id]
			if g.IndexID != w.IndexID || !g.Timestamp.Equal(w.Timestamp) || string(g.Payload) != string(w.Payload) {
				t.Errorf("event %s: read %s %s %q, wrote %s %s %q", id,
					g.IndexID, g.Timestamp.Format(time.RFC3339Nano), g.Payload, w.IndexID, w.Timestamp.Format(time.RFC3339Nano), w.Payload)
			}
		}
	})
}

package timeseries

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestPastRunwaySaysWhereItEnds checks that a write past the runway is
// not blamed on the shard manager (which is healthy and would create
// nothing more) but says that the time is past the runway and where the
// runway ends.
func TestPastRunwaySaysWhereItEnds(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		// Hourly shards, a runway of 2: shards exist for 12:00, 13:00 and
		// 14:00, so the runway ends at 15:00.
		_, err := svc.Put(ctx, "ev", []Event{ev("a", "e", t0.Add(4*time.Hour), "")})
		if !errors.Is(err, ErrNoShard) {
			t.Fatalf("past the runway: %v, want ErrNoShard", err)
		}
		for _, want := range []string{"past the runway", "ends at 2026-03-04T15:00:00"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("past the runway: %q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "shard manager") {
			t.Errorf("past the runway: %q blames the shard manager", err)
		}
	})
}

// TestZeroLimitIsTheDefault checks that a query with no Limit reads a page
// of store.DefaultLimit events, as the HTTP API and the client package do,
// rather than being refused.
func TestZeroLimitIsTheDefault(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		events := make([]Event, store.DefaultLimit+5)
		for i := range events {
			events[i] = ev("a", fmt.Sprintf("e%03d", i), t0, "")
		}
		if _, err := svc.Put(ctx, "ev", events); err != nil {
			t.Fatal(err)
		}
		page, err := svc.Query(ctx, "ev", Query{IndexID: "a"})
		if err != nil {
			t.Fatalf("query without a limit: %v", err)
		}
		if len(page.Events) != store.DefaultLimit || page.NextPageToken == nil {
			t.Errorf("query without a limit: %d events (token %v), want a full page of %d", len(page.Events), page.NextPageToken != nil, store.DefaultLimit)
		}
	})
}

package timeseries

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

func withTTL(e Event, ttl time.Duration) Event {
	e.TTL = ttl
	return e
}

// TestEventTTLIsExact checks that an event with a TTL of its own is hidden
// at timestamp + TTL to the millisecond, while its neighbours without one
// live their index's retention.
func TestEventTTLIsExact(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		ts := t0.Add(-10 * time.Minute).Add(123 * time.Millisecond)
		if _, err := svc.Put(ctx, "ev", []Event{
			withTTL(ev("a", "short", ts, "x"), time.Hour),
			ev("a", "long", ts, "y"),
			withTTL(ev("a", "shorter", ts.Add(time.Millisecond), "z"), 30*time.Minute),
		}); err != nil {
			t.Fatal(err)
		}
		ids := func() []string {
			var out []string
			for _, e := range queryAll(t, svc, Query{IndexID: "a", Limit: 10}) {
				out = append(out, e.EventID)
			}
			return out
		}
		if got := ids(); len(got) != 3 {
			t.Fatalf("fresh: %v, want 3 events", got)
		}
		clk.Set(ts.Add(30*time.Minute + time.Millisecond - time.Nanosecond))
		if got := ids(); len(got) != 3 {
			t.Fatalf("1ns before the 30m ttl: %v, want 3 events", got)
		}
		clk.Advance(time.Nanosecond)
		if got := ids(); len(got) != 2 {
			t.Fatalf("at the 30m ttl: %v, want long and short", got)
		}
		clk.Set(ts.Add(time.Hour - time.Nanosecond))
		if got := ids(); len(got) != 2 {
			t.Fatalf("1ns before the 1h ttl: %v, want long and short", got)
		}
		clk.Advance(time.Nanosecond)
		if got := ids(); len(got) != 1 || got[0] != "long" {
			t.Fatalf("at the 1h ttl: %v, want [long]", got)
		}
	})
}

// TestEventTTLRefusals checks that a batch holding one bad TTL is refused
// whole, naming the event, with nothing written.
func TestEventTTLRefusals(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		good := withTTL(ev("a", "ok", t0, "x"), time.Hour)
		for name, c := range map[string]struct {
			ttl  time.Duration
			ts   time.Time
			want error
		}{
			"negative":           {-time.Second, t0, store.ErrInvalid},
			"not whole ms":       {time.Hour + time.Microsecond, t0, store.ErrInvalid},
			"equal to retention": {6 * time.Hour, t0, store.ErrInvalid},
			"above retention":    {12 * time.Hour, t0, store.ErrInvalid},
			"already expired":    {time.Hour, t0.Add(-time.Hour), ErrExpired},
		} {
			_, err := svc.Put(ctx, "ev", []Event{good, withTTL(ev("a", "bad", c.ts, ""), c.ttl)})
			var me *store.MutationError
			if !errors.Is(err, c.want) || !errors.As(err, &me) || me.Index != 1 {
				t.Errorf("%s: %v, want %v naming event 1", name, err, c.want)
			}
		}
		if got := queryAll(t, svc, Query{IndexID: "a", Limit: 10}); len(got) != 0 {
			t.Fatalf("refused batches wrote %d events", len(got))
		}
		if err := CheckTTL(brief, 0); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckTTL(0): %v, want ErrInvalid", err)
		}
	})
}

// TestEventTTLLeavesTheDisk checks how events with a TTL leave the disk
// under the expiry decorator: the backend's default expiry mode decides
// (swept where it is sweep: one index entry per such event, deleted by the
// sweeper once due; native TTL on CQL: no entry), and an event without a
// TTL gets no index entry at all, as before.
func TestEventTTLLeavesTheDisk(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := t.Context()
		clk := storetest.NewClock(t0)
		raw := open(t, clk.Now)
		reg := prometheus.NewRegistry()
		wrapped, err := expiry.Wrap(ctx, raw, expiry.Options{Now: clk.Now, Window: time.Minute, Shards: 2, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		svc, _ := newService(t, wrapped, clk.Now)
		mustCreate(t, svc, brief)
		if _, err := svc.Put(ctx, "ev", []Event{ev("a", "plain1", t0, ""), ev("a", "plain2", t0, "")}); err != nil {
			t.Fatal(err)
		}
		if n := metricValue(t, reg, "ebb_expiry_indexed_total", ""); n != 0 {
			t.Fatalf("events without a ttl wrote %v index entries, want 0", n)
		}
		if _, err := svc.Put(ctx, "ev", []Event{withTTL(ev("a", "t1", t0, ""), time.Minute), withTTL(ev("a", "t2", t0, ""), time.Minute)}); err != nil {
			t.Fatal(err)
		}
		swept := store.DefaultExpiryMode(raw.Capabilities()).Swept()
		want := 0.0
		if swept {
			want = 2
		}
		if n := metricValue(t, reg, "ebb_expiry_indexed_total", ""); n != want {
			t.Fatalf("events with a ttl wrote %v index entries, want %v (mode %s)", n, want, store.DefaultExpiryMode(raw.Capabilities()))
		}
		clk.Advance(5 * time.Minute)
		res, err := wrapped.Sweeper().SweepOnce(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != int(want) {
			t.Fatalf("the sweeper deleted %d rows, want %v", res.Deleted, want)
		}
		if got := queryAll(t, svc, Query{IndexID: "a", Limit: 10}); len(got) != 2 {
			t.Fatalf("after the sweep: %d events, want the 2 without a ttl", len(got))
		}
		if swept {
			if st, err := raw.Stats(ctx, brief.shardTable(brief.shardOf(t0.UnixMilli()))); err != nil || (st.Exact && st.Rows != 2) {
				t.Fatalf("shard holds %d rows after the sweep (%v), want 2", st.Rows, err)
			}
		}
	})
}

// TestEventTTLOldShard checks that an event with a TTL falling in a shard
// created before shards took per-row expiries is refused before anything
// is written, and that the same event without a TTL is still accepted.
func TestEventTTLOldShard(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock(t0)
	st := testbackend.Pebble(t, clk.Now)
	old := shardSchema
	old.Name = hourly.shardTable(hourly.shardOf(t0.UnixMilli()))
	old.NeverExpires = true
	if err := st.CreateTable(ctx, old); err != nil {
		t.Fatal(err)
	}
	svc, _ := newService(t, st, clk.Now)
	mustCreate(t, svc, hourly)
	next := t0.Add(time.Hour)
	_, err := svc.Put(ctx, "ev", []Event{withTTL(ev("a", "n", next, ""), time.Hour), withTTL(ev("a", "o", t0, ""), time.Hour)})
	var me *store.MutationError
	if !errors.Is(err, ErrTTLShard) || !errors.Is(err, store.ErrInvalid) || !errors.As(err, &me) || me.Index != 1 {
		t.Fatalf("ttl event in an old shard: %v, want ErrTTLShard naming event 1", err)
	}
	if got := queryAll(t, svc, Query{IndexID: "a", Limit: 10}); len(got) != 0 {
		t.Fatalf("refused batch wrote %d events", len(got))
	}
	if _, err := svc.Put(ctx, "ev", []Event{ev("a", "o", t0, ""), withTTL(ev("a", "n", next, ""), time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

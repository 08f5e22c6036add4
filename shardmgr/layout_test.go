package shardmgr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

func TestLayouts(t *testing.T) {
	epoch := time.Unix(0, 0).UTC()
	at := time.Date(2026, 3, 4, 16, 0, 0, 0, time.UTC)
	cfg := Config{Index: "ev", TableBucket: 2 * time.Hour, Retention: 6 * time.Hour, Runway: 2,
		Layouts: []Layout{{From: epoch, TableBucket: time.Hour}, {From: at, TableBucket: 2 * time.Hour}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table string
		start time.Time
		tb    time.Duration
		kind  NameKind
	}{
		{ShardName("ev", at.Add(-time.Hour)), at.Add(-time.Hour), time.Hour, ShardOf},
		{ShardName("ev", at), at, 2 * time.Hour, ShardOf},
		{ShardName("ev", at.Add(time.Hour)), time.Time{}, 0, Unrecognized},
		{ShardName("ev", at.Add(2*time.Hour)), at.Add(2 * time.Hour), 2 * time.Hour, ShardOf},
		{"ev_x_1772640000", time.Time{}, 0, Foreign},
	} {
		start, tb, kind := ParseShard(cfg, c.table)
		if !start.Equal(c.start) || tb != c.tb || kind != c.kind {
			t.Errorf("%s: %s %s %d, want %s %s %d", c.table, start, tb, kind, c.start, c.tb, c.kind)
		}
	}
	if s, tb := ShardAt(cfg, at.Add(-time.Minute)); !s.Equal(at.Add(-time.Hour)) || tb != time.Hour {
		t.Errorf("shard before the change: %s %s", s, tb)
	}
	if s, tb := ShardAt(cfg, at.Add(3*time.Hour)); !s.Equal(at.Add(2*time.Hour)) || tb != 2*time.Hour {
		t.Errorf("shard after the change: %s %s", s, tb)
	}

	for name, ls := range map[string][]Layout{
		"not from the epoch":     {{From: at, TableBucket: time.Hour}, {From: at.Add(2 * time.Hour), TableBucket: 2 * time.Hour}},
		"unaligned to its own":   {{From: epoch, TableBucket: time.Hour}, {From: at.Add(time.Hour), TableBucket: 2 * time.Hour}},
		"unaligned to the old":   {{From: epoch, TableBucket: 3 * time.Hour}, {From: at, TableBucket: 2 * time.Hour}},
		"out of order":           {{From: epoch, TableBucket: time.Hour}, {From: at, TableBucket: time.Hour}, {From: at, TableBucket: 2 * time.Hour}},
		"last is not the bucket": {{From: epoch, TableBucket: 2 * time.Hour}, {From: at, TableBucket: time.Hour}},
	} {
		bad := cfg
		bad.Layouts = ls
		if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}

// TestRunwayAcrossALayoutChange: the manager makes the old layout's shards
// up to the boundary and the new one's after it, and measures the runway
// by the width of its last shard, so that hourly shards before a change to
// daily ones are not reported as less than one (daily) shard of runway.
func TestRunwayAcrossALayoutChange(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC))
		st := open(t, clock.Now)
		boundary := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
		cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 2 * time.Hour, Runway: 2, Schema: testSchema,
			Layouts: []Layout{{From: time.Unix(0, 0).UTC(), TableBucket: time.Hour}, {From: boundary, TableBucket: 24 * time.Hour}}}
		m, reg := newManager(t, st, clock.Now, cfg)
		for _, at := range []time.Time{clock.Now(), boundary.Add(-2 * time.Hour), boundary.Add(30 * time.Minute)} {
			clock.Set(at)
			if err := m.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got := tableNames(t, st, "ev_")
		// At 00:30: retention keeps 22:00 and 23:00 (1h), the hot shard is
		// the first daily one, and two daily ones follow.
		want := []time.Time{boundary.Add(-2 * time.Hour), boundary.Add(-time.Hour), boundary, boundary.Add(24 * time.Hour), boundary.Add(48 * time.Hour)}
		if len(got) != len(want) {
			t.Errorf("tables %v, want %d", got, len(want))
		}
		for _, s := range want {
			if _, ok := got[ShardName("ev", s)]; !ok {
				t.Errorf("%s missing; have %v", ShardName("ev", s), got)
			}
		}
		if n := metricValue(t, reg, "ebb_reconcile_runway_short_total", ""); n != 0 {
			t.Errorf("runway reported short %v times", n)
		}
		if n := metricValue(t, reg, "ebb_shard_table_bucket_seconds", "ev"); n != 24*3600 {
			t.Errorf("table bucket %vs, want the daily shard's", n)
		}
	})
}

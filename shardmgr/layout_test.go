package shardmgr

import (
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
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

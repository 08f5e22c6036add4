package shardmgr

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/ebb-data/ebb/store"
)

// TestPlanData runs the planner on every testdata/plan/*.txt file, read by
// github.com/cockroachdb/datadriven: each case is the command "plan", the
// input lines below it, "----", and the expected plan. Run with -rewrite
// (datadriven's flag) to accept the plans computed now, and review the
// diff. The input lines are
//
//	config index=events table_bucket=168h retention=1008h runway=2 [hot=R/W] [peak=R/W] [warm] [max_drops=N] [max_clock_jump=D] [provider=dynamodb|keyspaces] [switch_limit=N] [prewarm_hold=D] [layouts=FROM@TB,FROM@TB]
//	now 2024-06-27T12:00:00Z
//	last_run 2024-06-27T11:59:30Z
//	shard events_1719446400 [provisioned=R/W] [warm=R/W] [switches=T,T] [store_switches=T,T] [prewarmed=T]
func TestPlanData(t *testing.T) {
	files, err := filepath.Glob("testdata/plan/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			datadriven.RunTest(t, file, func(t *testing.T, td *datadriven.TestData) string {
				if td.Cmd != "plan" {
					t.Fatalf("%s: unknown command %q, want plan", td.Pos, td.Cmd)
				}
				cfg, now, observed, last := parseCase(t, td.Input)
				return NewPlan(cfg, now, observed, last).String()
			})
		})
	}
}

func parseCase(t *testing.T, input string) (Config, time.Time, []Shard, LastRun) {
	t.Helper()
	var cfg Config
	var now time.Time
	var observed []Shard
	var last LastRun
	for n, line := range strings.Split(input, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		fail := func(format string, args ...any) {
			t.Fatalf("line %d %q: %s", n+1, line, fmt.Sprintf(format, args...))
		}
		switch fields[0] {
		case "config":
			for _, kv := range fields[1:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "index":
					cfg.Index = v
				case "table_bucket":
					cfg.TableBucket = mustDuration(t, v)
				case "retention":
					cfg.Retention = mustDuration(t, v)
				case "runway":
					cfg.Runway = mustInt(t, v)
				case "hot":
					cfg.Capacity.HotRead, cfg.Capacity.HotWrite = mustUnits(t, v)
				case "peak":
					cfg.Capacity.PeakRead, cfg.Capacity.PeakWrite = mustUnits(t, v)
				case "warm":
					cfg.WarmThroughput = true
				case "max_drops":
					cfg.Guards.MaxDropsPerRun = mustInt(t, v)
				case "max_clock_jump":
					cfg.Guards.MaxClockJump = mustDuration(t, v)
				case "provider":
					cfg.Switches = map[string]store.SwitchRules{"dynamodb": store.DynamoDBSwitches, "keyspaces": store.KeyspacesSwitches}[v]
					if v == "keyspaces" {
						cfg.WarmThroughput = false // the rules alone; warm throughput is the "warm" key
					}
				case "switch_limit":
					cfg.Capacity.SwitchLimit = mustInt(t, v)
				case "prewarm_hold":
					cfg.Capacity.PrewarmHold = mustDuration(t, v)
				case "layouts":
					for _, l := range strings.Split(v, ",") {
						from, tb, _ := strings.Cut(l, "@")
						cfg.Layouts = append(cfg.Layouts, Layout{From: mustTime(t, from), TableBucket: mustDuration(t, tb)})
					}
				default:
					fail("unknown config key %q", k)
				}
			}
			if err := cfg.Validate(); err != nil {
				fail("%v", err)
			}
		case "now":
			now = mustTime(t, fields[1])
		case "last_run":
			last.At = mustTime(t, fields[1])
		case "shard":
			sh := Shard{Table: fields[1]}
			for _, kv := range fields[2:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "provisioned":
					r, w := mustUnits(t, v)
					sh.Capacity = store.Capacity{Mode: store.Provisioned, ReadUnits: r, WriteUnits: w}
				case "warm":
					sh.Capacity.WarmRead, sh.Capacity.WarmWrite = mustUnits(t, v)
				case "switches":
					for _, s := range strings.Split(v, ",") {
						sh.History.Switches = append(sh.History.Switches, mustTime(t, s))
					}
				case "store_switches":
					for _, s := range strings.Split(v, ",") {
						sh.Switches = append(sh.Switches, mustTime(t, s))
					}
				case "prewarmed":
					sh.History.PrewarmedAt = mustTime(t, v)
				default:
					fail("unknown shard key %q", k)
				}
			}
			observed = append(observed, sh)
		default:
			fail("unknown directive")
		}
	}
	if now.IsZero() {
		t.Fatal("case has no now")
	}
	return cfg, now, observed, last
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustInt(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustUnits(t *testing.T, s string) (int64, int64) {
	t.Helper()
	r, w, ok := strings.Cut(s, "/")
	if !ok {
		t.Fatalf("units %q: want R/W", s)
	}
	return int64(mustInt(t, r)), int64(mustInt(t, w))
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UTC()
}

// TestPlanProperties checks, over many clock readings, what every plan must
// satisfy whatever the inputs: nothing is ever dropped before end +
// retention, and after applying it the hot shard and the runway exist.
func TestPlanProperties(t *testing.T) {
	cfg := Config{Index: "ev", TableBucket: 24 * time.Hour, Retention: 72 * time.Hour, Runway: 2, Guards: Guards{MaxDropsPerRun: 100}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	existing := map[string]bool{}
	for now := start; now.Before(start.Add(30 * 24 * time.Hour)); now = now.Add(7*time.Hour + 13*time.Minute + 1500*time.Millisecond) {
		var observed []Shard
		for name := range existing {
			observed = append(observed, Shard{Table: name})
		}
		plan := NewPlan(cfg, now, observed, LastRun{})
		for _, a := range plan.Actions {
			switch a.Op {
			case OpDrop:
				if a.End.Add(cfg.Retention).After(now) {
					t.Fatalf("at %s: %s dropped early (end %s)", now, a.Table, a.End)
				}
				delete(existing, a.Table)
			case OpCreate:
				existing[a.Table] = true
			}
		}
		for k := 0; k <= cfg.Runway; k++ {
			name := ShardName("ev", BucketStart(now, cfg.TableBucket).Add(time.Duration(k)*cfg.TableBucket))
			if !existing[name] {
				t.Fatalf("at %s: %s missing after apply", now, name)
			}
		}
		for name := range existing {
			s, _ := ParseShardName("ev", cfg.TableBucket, name)
			if !s.Add(cfg.TableBucket).Add(cfg.Retention).After(now) {
				t.Fatalf("at %s: expired %s kept", now, name)
			}
		}
	}
}

func TestParseShardName(t *testing.T) {
	week := 168 * time.Hour
	for _, c := range []struct {
		index, table string
		want         NameKind
	}{
		{"foo", "foo_1719446400", ShardOf},
		{"foo", "foo_bar_1719446400", Foreign},
		{"foo", "foo_1719446401", Unrecognized}, // misaligned
		{"foo", "foo_01719446400", Unrecognized},
		{"foo", "foo_", Unrecognized},
		{"foo", "foo_x", Unrecognized},
		{"foo", "foo_1719446400_old", Unrecognized},
		{"foo", "foo_-604800", Unrecognized},
		{"foo", "foobar_1719446400", Unrecognized},
		{"foo_bar", "foo_bar_1719446400", ShardOf},
		{"foo", "foo_0", ShardOf},
	} {
		if _, got := ParseShardName(c.index, week, c.table); got != c.want {
			t.Errorf("ParseShardName(%q, %q) = %d, want %d", c.index, c.table, got, c.want)
		}
	}
	start, kind := ParseShardName("events", week, "events_1719446400")
	if kind != ShardOf || !start.Equal(time.Unix(1719446400, 0)) || ShardName("events", start) != "events_1719446400" {
		t.Errorf("round trip: %v %v", start, kind)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Index: "events", TableBucket: time.Hour, Retention: 24 * time.Hour, Runway: 2}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"name":           func(c *Config) { c.Index = "Events" },
		"long name":      func(c *Config) { c.Index = strings.Repeat("a", 32) },
		"fractional tb":  func(c *Config) { c.TableBucket = 1500 * time.Millisecond },
		"zero retention": func(c *Config) { c.Retention = 0 },
		"runway":         func(c *Config) { c.Runway = 0 },
		"too many":       func(c *Config) { c.TableBucket = time.Second; c.Retention = time.Hour },
		"negative units": func(c *Config) { c.Capacity.HotWrite = -1 },
	} {
		c := ok
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted %+v", name, c)
		}
	}
}

package shardmgr

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/store"
)

// ErrInvalidConfig is wrapped (together with store.ErrInvalid) by every
// Config validation error.
var ErrInvalidConfig = store.Mark(nil, "shardmgr", "invalid config")

// IndexNamePattern is what index names match. Shard names add "_" and at
// most 12 digits (seconds until the year 33658), which keeps them within
// store.MaxNameLen (48, CQL's limit).
var IndexNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)

// MaxTotalShards is the default bound on the shards all indexes of one
// deployment keep together (ebb.Open applies it at index create): every
// shard is a table, and backends bound tables (DynamoDB's default quota
// is 2,500 per region, Cassandra slows with thousands of tables).
const MaxTotalShards = 10000

// DefaultVisitBudget is the time ebb.Open lets one pass of the shard
// manager spend on one index, when it bounds at index create how many
// indexes a pass over all of them may visit: a few backend calls and a
// table created and dropped.
const DefaultVisitBudget = 500 * time.Millisecond

// MaxShards bounds how many shards one index may keep (retention plus
// runway, in table buckets), so that a tiny table bucket with a long
// retention cannot ask a backend for millions of tables.
const MaxShards = 1000

// Defaults for the zero values of Config fields.
const (
	DefaultMaxClockJump   = 24 * time.Hour
	DefaultMaxDropsPerRun = 4
	// DefaultSwitchWindow is the window of CapacityPolicy.SwitchLimit when
	// SwitchWindow is not set and the backend has none.
	DefaultSwitchWindow = 24 * time.Hour
	// DefaultPrewarmHold is how long a shard pre-warmed by provisioning it
	// stays provisioned before it goes back to on-demand: long enough for
	// the provider to split the table's partitions.
	DefaultPrewarmHold = time.Hour
)

// Config describes one index's shards, as the manager needs them.
type Config struct {
	// Index is the index name; it matches IndexNamePattern.
	Index string
	// TableBucket is the width of a shard: whole seconds, > 0. Shards are
	// aligned to the Unix epoch: [k*TableBucket, (k+1)*TableBucket).
	TableBucket time.Duration
	// Retention is how long a row lives after its timestamp. A shard
	// [start, end) is dropped once end + Retention <= now.
	Retention time.Duration
	// Runway is how many shards after the hot one (the one holding now)
	// exist at any time. The manager may be down for Runway table buckets
	// before writes start failing with no shard.
	Runway int
	// Schema is the shard table spec; its Name is replaced by each shard's.
	Schema store.TableSpec
	// Capacity is the capacity policy; the zero value leaves capacity alone.
	Capacity CapacityPolicy
	// Guards protect against dropping data by mistake.
	Guards Guards
	// WarmThroughput is the backend's capability: pre-warm by setting warm
	// throughput instead of provisioning at peak.
	WarmThroughput bool
	// DropKeepsSnapshot is the backend's capability: a drop leaves a
	// snapshot on disk (Cassandra's auto_snapshot), which drop reasons say.
	DropKeepsSnapshot bool
	// Switches are the backend's limits on capacity-mode switches
	// (store.Capabilities.Switches): a switch they would refuse is
	// deferred, so that the store never refuses one the plan applies.
	Switches store.SwitchRules
	// Classes are the backend's table classes and the limits on changing
	// them (store.Capabilities.Classes); CapacityPolicy.ColdAfter moves
	// shards between classes only where they are supported.
	Classes store.ClassRules
	// Layouts are the index's layout epochs, oldest first, when its table
	// bucket changed: the last is TableBucket's. Empty means one layout
	// of TableBucket from the epoch.
	Layouts []Layout
	// Archive, when set, is where each shard is archived before its drop
	// (a URL, file:///DIR or s3://bucket/prefix): Options.PrepareDrop
	// archives it, and a drop it refuses is held.
	Archive string
}

// Guards bound what one run may drop. Zero values take the defaults.
type Guards struct {
	// MaxClockJump: when the clock moved forward more than this since the
	// last recorded run, no shard is dropped (drops are deferred) and the
	// run is not recorded, so drops stay refused until an operator applies
	// a plan with AllowClockJump. A clock that jumps ahead by mistake would
	// otherwise drop shards whose data is still inside retention. Default
	// DefaultMaxClockJump.
	MaxClockJump time.Duration
	// MaxDropsPerRun caps drops per run; the oldest shards go first and the
	// rest are deferred to later runs. Default DefaultMaxDropsPerRun.
	MaxDropsPerRun int
}

// CapacityPolicy says how shards are provisioned: the hot shard
// provisioned at HotRead/HotWrite, the next one pre-warmed to
// PeakRead/PeakWrite ahead of time, the others on-demand. With
// HotWrite == 0 (the zero value) capacity is not managed and every shard
// keeps the capacity it was created with (on-demand).
type CapacityPolicy struct {
	HotRead   int64 `json:"hot_read_units,omitempty"`
	HotWrite  int64 `json:"hot_write_units,omitempty"`
	PeakRead  int64 `json:"peak_read_units,omitempty"`
	PeakWrite int64 `json:"peak_write_units,omitempty"`
	// SwitchLimit, when set, allows this many switches from provisioned to
	// on-demand per table within SwitchWindow instead of the backend's
	// limit (Config.Switches); a switch that would break it is deferred.
	// Setting it above the provider's limit makes the store refuse what
	// the plan applies. SwitchWindow defaults to the backend's window, or
	// DefaultSwitchWindow.
	SwitchLimit  int           `json:"switch_limit,omitempty"`
	SwitchWindow time.Duration `json:"switch_window,omitempty"`
	// PrewarmHold: on backends without warm throughput, a shard pre-warmed
	// by provisioning it at peak goes back to on-demand after this long.
	// Default DefaultPrewarmHold.
	PrewarmHold time.Duration `json:"prewarm_hold,omitempty"`
	// ColdAfter, when set, moves each shard whose end is at least this
	// long ago to the infrequent-access table class (DynamoDB's
	// Standard-IA), and back to the standard class when it is no longer
	// (ColdAfter raised), on backends with table classes (Config.Classes).
	// It is independent of the hot and peak units.
	ColdAfter time.Duration `json:"cold_after,omitempty"`
}

// Enabled reports whether capacity is managed.
func (p CapacityPolicy) Enabled() bool { return p.HotWrite > 0 }

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Guards.MaxClockJump <= 0 {
		c.Guards.MaxClockJump = DefaultMaxClockJump
	}
	if c.Guards.MaxDropsPerRun <= 0 {
		c.Guards.MaxDropsPerRun = DefaultMaxDropsPerRun
	}
	p := &c.Capacity
	if p.SwitchLimit > 0 {
		c.Switches.MaxToOnDemand = p.SwitchLimit
	}
	if p.SwitchWindow > 0 {
		c.Switches.Window = p.SwitchWindow
	} else if c.Switches.MaxToOnDemand > 0 && c.Switches.Window <= 0 {
		c.Switches.Window = DefaultSwitchWindow
	}
	if p.PrewarmHold <= 0 {
		p.PrewarmHold = DefaultPrewarmHold
	}
	if p.PeakRead < p.HotRead {
		p.PeakRead = p.HotRead
	}
	if p.PeakWrite < p.HotWrite {
		p.PeakWrite = p.HotWrite
	}
	return c
}

// Validate checks the config. Errors wrap ErrInvalidConfig and
// store.ErrInvalid.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "%w: index %q: %s", ErrInvalidConfig, c.Index, fmt.Sprintf(format, args...))
	}
	switch {
	case !IndexNamePattern.MatchString(c.Index):
		return bad("name must match %s", IndexNamePattern)
	case c.TableBucket <= 0 || c.TableBucket%time.Second != 0:
		return bad("table bucket %s must be a positive whole number of seconds", durfmt.Format(c.TableBucket))
	case c.Retention <= 0:
		return bad("retention %s must be positive", durfmt.Format(c.Retention))
	case c.Runway < 1:
		return bad("runway %d must be at least 1", c.Runway)
	case ShardCount(c) > MaxShards:
		return bad("retention %s and runway %d keep %d shards of %s; at most %d", durfmt.Format(c.Retention), c.Runway, ShardCount(c), durfmt.Format(c.TableBucket), MaxShards)
	case c.Capacity.HotRead < 0 || c.Capacity.HotWrite < 0 || c.Capacity.PeakRead < 0 || c.Capacity.PeakWrite < 0:
		return bad("capacity units must not be negative")
	case c.Capacity.HotRead > 0 && c.Capacity.HotWrite == 0:
		return bad("capacity: hot read units without hot write units")
	case c.Capacity.ColdAfter < 0 || c.Capacity.ColdAfter%time.Second != 0:
		return bad("capacity: cold_after %s must be a positive whole number of seconds", durfmt.Format(c.Capacity.ColdAfter))
	}
	return c.validateLayouts()
}

// ShardCount is how many shards the index keeps at most: those inside
// retention (one more than retention/bucket, as the oldest is partial), the
// hot one and the runway. c must be valid.
func ShardCount(c Config) int64 {
	return int64(c.Retention/c.TableBucket) + 2 + int64(c.Runway)
}

// ShardName returns the name of the shard starting at start.
func ShardName(index string, start time.Time) string {
	return index + "_" + strconv.FormatInt(start.Unix(), 10)
}

// NameKind classifies a table name listed under an index's prefix.
type NameKind uint8

// Name kinds.
const (
	// Unrecognized: starts with the index's prefix but is neither its shard
	// nor plausibly another index's; left alone and reported.
	Unrecognized NameKind = iota
	// ShardOf: a shard of this index.
	ShardOf
	// Foreign: a shard of another index whose name extends this one's.
	Foreign
)

// ParseShardName classifies table for index. A name is a shard of index
// only when it is exactly index + "_" + the canonical decimal Unix seconds
// of a start aligned to tableBucket; parsing is strict so that a shard of
// index "foo_bar" ("foo_bar_1719446400") is never taken for one of "foo".
func ParseShardName(index string, tableBucket time.Duration, table string) (time.Time, NameKind) {
	prefix := index + "_"
	if !strings.HasPrefix(table, prefix) {
		return time.Time{}, Unrecognized
	}
	if secs, ok := parseSeconds(table[len(prefix):]); ok {
		tb := int64(tableBucket / time.Second)
		if tb > 0 && secs%tb == 0 {
			return time.Unix(secs, 0).UTC(), ShardOf
		}
		return time.Time{}, Unrecognized
	}
	i := strings.LastIndexByte(table, '_')
	if _, ok := parseSeconds(table[i+1:]); ok && IndexNamePattern.MatchString(table[:i]) {
		return time.Time{}, Foreign
	}
	return time.Time{}, Unrecognized
}

// parseSeconds parses canonical non-negative decimal seconds: digits only,
// no sign, no leading zero.
func parseSeconds(s string) (int64, bool) {
	if s == "" || len(s) > 12 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// BucketStart returns the start of the table bucket holding t.
func BucketStart(t time.Time, tableBucket time.Duration) time.Time {
	tb := int64(tableBucket / time.Second)
	s := t.Unix()
	k := s / tb
	if s%tb < 0 {
		k-- // floor, not truncation, before 1970
	}
	return time.Unix(k*tb, 0).UTC()
}

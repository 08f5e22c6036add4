package timeseries

import (
	"fmt"
	"strings"
	"time"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
)

// Sentinel errors. Errors about the request also wrap the store sentinel
// the HTTP layer maps (store.ErrInvalid, store.ErrNotFound, ...).
var (
	// ErrNoShard: no shard table exists for an event's time, either because
	// it is beyond the runway or because the manager has been down longer
	// than the runway. Nothing was written.
	ErrNoShard = store.Mark(nil, "timeseries", "no shard for that time")
	// ErrIndexNotFound: no index of that name. Also matches
	// store.ErrNotFound.
	ErrIndexNotFound = store.Mark(store.ErrNotFound, "timeseries", "index not found")
	// ErrExpired: an event's timestamp is already past its index's
	// retention (timestamp + retention <= now). Nothing was written.
	ErrExpired = store.Mark(nil, "timeseries", "already expired")
	// ErrLayoutChange: a change of an index's table_bucket or
	// partition_bucket that cannot be made (see Config.Layouts). Also
	// matches store.ErrInvalid.
	ErrLayoutChange = store.Mark(store.ErrInvalid, "timeseries", "invalid layout change")
)

// DefaultRunway is the runway of a Config whose Runway is zero.
const DefaultRunway = 2

// MaxIDBytes bounds index_id and event_id.
const MaxIDBytes = 256

// MaxBatch is the most events one Put accepts.
const MaxBatch = 10000

// Column names of a shard table.
const (
	colIndexID = "index_id"
	colBucket  = "bucket"
	colTS      = "ts"
	colEventID = "event_id"
	colPayload = "payload"
)

// shardSchema is the spec of every shard table (the name is set per shard):
// ((index_id, bucket), ts, event_id) -> payload, with no default TTL since
// expiry is by dropping the table and by filtering on read. It does not
// declare NeverExpires: an event with a TTL of its own (Event.TTL) is a row
// with an expiry. Shards created while it did refuse such events
// (ErrTTLShard); Equal ignores the flag, so they still match this spec.
var shardSchema = store.TableSpec{
	PartitionKey: []store.Column{{Name: colIndexID, Type: store.TypeText}, {Name: colBucket, Type: store.TypeInt64}},
	Clustering:   []store.Column{{Name: colTS, Type: store.TypeTimestamp}, {Name: colEventID, Type: store.TypeText}},
	Values:       []store.Column{{Name: colPayload, Type: store.TypeBytes}},
}

// Config is an index's configuration. Retention, runway and capacity
// change in place; a changed table or partition bucket takes effect at a
// shard boundary after the change (see Layouts).
type Config struct {
	// Name matches shardmgr.IndexNamePattern: ^[a-z][a-z0-9_]{0,30}$.
	Name string `json:"name"`
	// TableBucket is the time width of a shard: whole seconds, a multiple
	// of PartitionBucket.
	TableBucket time.Duration `json:"table_bucket"`
	// PartitionBucket is the time width of one partition (per index_id)
	// within a shard: whole milliseconds, > 0. A read visits every
	// partition bucket its range covers, so it should be wide enough that
	// most partitions hold rows.
	PartitionBucket time.Duration `json:"partition_bucket"`
	// Retention is how long an event lives after its timestamp: > 0, whole
	// milliseconds.
	Retention time.Duration `json:"retention"`
	// Runway is how many shards exist after the one holding now; zero
	// means DefaultRunway.
	Runway int `json:"runway"`
	// Capacity is the capacity policy of the shards; the zero value leaves
	// every shard on-demand.
	Capacity shardmgr.CapacityPolicy `json:"capacity"`
	// HeldRetention is set by Create when it shortens Retention: the longer
	// retention the index had. The background manager keeps what it
	// covers; only an explicit apply (Reconcile without DryRun) drops what
	// the new Retention lets go, and then clears it. Create ignores it.
	HeldRetention time.Duration `json:"held_retention,omitempty"`
	// Layouts are the index's layout epochs, oldest first, once its
	// TableBucket or PartitionBucket changed: each is in force from its
	// From until the next one's, the first from the Unix epoch, and the
	// last is TableBucket and PartitionBucket. Empty (every index whose
	// layout never changed) means one layout from the epoch. Create sets
	// it: a change takes effect at the first shard boundary, common to
	// both table buckets, at or after the end of the last shard of the
	// layout in force that exists or that the runway holds at the time of
	// the change; a second change before the first one's shard exists
	// replaces it. Create ignores the field as given.
	Layouts []Layout `json:"layouts,omitempty"`
	// Archive, when set, keeps a copy of each shard before its drop
	// (package archive); it may change at any time.
	Archive *ArchiveConfig `json:"archive,omitempty"`
}

// ArchiveConfig says where an index's shards are archived before their
// drop.
type ArchiveConfig struct {
	// To is the location: file:///DIR or s3://bucket/prefix.
	To string `json:"to"`
}

// archiveTo is the index's archive location; "" when it has none.
func (c Config) archiveTo() string {
	if c.Archive == nil {
		return ""
	}
	return c.Archive.To
}

// Layout is one layout epoch of an index (Config.Layouts).
type Layout struct {
	// From is where the layout takes effect, a multiple of its
	// TableBucket and of the previous layout's.
	From            time.Time     `json:"from"`
	TableBucket     time.Duration `json:"table_bucket"`
	PartitionBucket time.Duration `json:"partition_bucket"`
}

// layoutList returns c's layout epochs: c.Layouts, or the one layout of
// an index whose layout never changed.
func (c Config) layoutList() []Layout {
	if len(c.Layouts) == 0 {
		return []Layout{{From: time.Unix(0, 0).UTC(), TableBucket: c.TableBucket, PartitionBucket: c.PartitionBucket}}
	}
	return c.Layouts
}

// layoutAt returns the table and partition buckets, in ms, of the layout
// in force at tsMs.
func (c Config) layoutAt(tsMs int64) (tbMs, pbMs int64) {
	l := c.layoutAtMs(tsMs)
	return l.TableBucket.Milliseconds(), l.PartitionBucket.Milliseconds()
}

func (c Config) layoutAtMs(tsMs int64) Layout {
	if len(c.Layouts) == 0 {
		return Layout{TableBucket: c.TableBucket, PartitionBucket: c.PartitionBucket}
	}
	l := c.Layouts[0]
	for _, next := range c.Layouts[1:] {
		if tsMs < next.From.UnixMilli() {
			break
		}
		l = next
	}
	return l
}

// layoutChange describes the change from layout a to b, for plans and
// logs: "table_bucket 1h -> 24h, partition_bucket 1h".
func layoutChange(a, b Layout) string {
	tb := "table_bucket " + durfmt.Format(b.TableBucket)
	if a.TableBucket != b.TableBucket {
		tb = fmt.Sprintf("table_bucket %s -> %s", durfmt.Format(a.TableBucket), durfmt.Format(b.TableBucket))
	}
	pb := "partition_bucket " + durfmt.Format(b.PartitionBucket)
	if a.PartitionBucket != b.PartitionBucket {
		pb = fmt.Sprintf("partition_bucket %s -> %s", durfmt.Format(a.PartitionBucket), durfmt.Format(b.PartitionBucket))
	}
	return "layout change: " + tb + ", " + pb
}

// changed names the fields of want that differ from c: the changes
// Create makes to an existing index.
func (c Config) changed(want Config) []string {
	var out []string
	if c.TableBucket != want.TableBucket {
		out = append(out, "table_bucket")
	}
	if c.PartitionBucket != want.PartitionBucket {
		out = append(out, "partition_bucket")
	}
	if c.Retention != want.Retention {
		out = append(out, "retention")
	}
	if c.Runway != want.Runway {
		out = append(out, "runway")
	}
	if c.Capacity != want.Capacity {
		out = append(out, "capacity")
	}
	if c.archiveTo() != want.archiveTo() {
		out = append(out, "archive")
	}
	return out
}

// WithDefaults returns c with zero fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Runway == 0 {
		c.Runway = DefaultRunway
	}
	return c
}

// Validate checks c (after WithDefaults). Errors wrap store.ErrInvalid.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "index %q: %s", c.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case !shardmgr.IndexNamePattern.MatchString(c.Name):
		return bad("name must match %s", shardmgr.IndexNamePattern)
	case reservedName(c.Name):
		return bad("the names ebb, ebb_* and list are reserved for ebb's own tables (ebb_meta, ebb_expiry, ebb_items, list_*)")
	case c.TableBucket <= 0 || c.TableBucket%time.Second != 0:
		return bad("table_bucket %s must be a positive whole number of seconds", durfmt.Format(c.TableBucket))
	case c.PartitionBucket <= 0 || c.PartitionBucket%time.Millisecond != 0:
		return bad("partition_bucket %s must be a positive whole number of milliseconds", durfmt.Format(c.PartitionBucket))
	case c.TableBucket%c.PartitionBucket != 0:
		return bad("table_bucket %s must be a multiple of partition_bucket %s", durfmt.Format(c.TableBucket), durfmt.Format(c.PartitionBucket))
	case c.Retention <= 0 || c.Retention%time.Millisecond != 0:
		return bad("retention %s must be a positive whole number of milliseconds", durfmt.Format(c.Retention))
	case c.Archive != nil:
		if err := archive.CheckLocation(c.Archive.To); err != nil {
			return store.Errorf(store.ErrInvalid, "index %q: %w", c.Name, err)
		}
	}
	for _, l := range c.Layouts {
		if l.PartitionBucket <= 0 || l.PartitionBucket%time.Millisecond != 0 || l.TableBucket%l.PartitionBucket != 0 {
			return bad("layout from %s: partition_bucket %s must be a positive whole number of milliseconds dividing table_bucket %s",
				l.From.UTC().Format(time.RFC3339), durfmt.Format(l.PartitionBucket), durfmt.Format(l.TableBucket))
		}
	}
	if n := len(c.Layouts); n > 0 && c.Layouts[n-1].PartitionBucket != c.PartitionBucket {
		return bad("the last layout's partition_bucket %s is not partition_bucket %s", durfmt.Format(c.Layouts[n-1].PartitionBucket), durfmt.Format(c.PartitionBucket))
	}
	return c.shardConfig(shardmgr.Guards{}, store.Capabilities{}).Validate()
}

// shardConfig is what the background manager runs with: a shortened
// retention is held at the longer one until an explicit apply (see
// HeldRetention).
func (c Config) shardConfig(g shardmgr.Guards, caps store.Capabilities) shardmgr.Config {
	return shardmgr.Config{
		Index:             c.Name,
		TableBucket:       c.TableBucket,
		Retention:         max(c.Retention, c.HeldRetention),
		Runway:            c.Runway,
		Schema:            shardSchema,
		Capacity:          c.Capacity,
		Guards:            g,
		WarmThroughput:    caps.WarmThroughput,
		DropKeepsSnapshot: caps.DropKeepsSnapshot,
		Switches:          caps.Switches,
		Classes:           caps.Classes,
		Layouts:           c.shardLayouts(),
		Archive:           c.archiveTo(),
	}
}

// shardLayouts is Layouts as the manager sees them: table buckets, with
// the change each makes for its plans.
func (c Config) shardLayouts() []shardmgr.Layout {
	if len(c.Layouts) == 0 {
		return nil
	}
	out := make([]shardmgr.Layout, len(c.Layouts))
	for i, l := range c.Layouts {
		out[i] = shardmgr.Layout{From: l.From, TableBucket: l.TableBucket}
		if i > 0 {
			out[i].Change = layoutChange(c.Layouts[i-1], l)
		}
	}
	return out
}

// Layout arithmetic, in Unix milliseconds. All of it is epoch-aligned UTC;
// timestamps are refused before 1970, so division and floor agree.

// Each uses the layout in force at the time it is given (Layouts).

// shardOf returns the start (Unix ms) of the shard holding tsMs.
func (c Config) shardOf(tsMs int64) int64 {
	tb, _ := c.layoutAt(tsMs)
	return tsMs / tb * tb
}

// bucketOf returns the partition bucket number of tsMs.
func (c Config) bucketOf(tsMs int64) int64 {
	_, pb := c.layoutAt(tsMs)
	return tsMs / pb
}

// shardEnd returns the end (Unix ms) of the shard starting at startMs.
func (c Config) shardEnd(startMs int64) int64 {
	tb, _ := c.layoutAt(startMs)
	return startMs + tb
}

// shardTable returns the shard table holding shard start startMs.
func (c Config) shardTable(startMs int64) string {
	return shardmgr.ShardName(c.Name, time.UnixMilli(startMs))
}

// Index is an index as reported: its config, its shards and its runway.
type Index struct {
	Config
	// Shards sorted by start.
	Shards []ShardInfo
	// RunwayRemaining is the time from now to the end of the last existing
	// shard; zero or negative when none is ahead.
	RunwayRemaining time.Duration
}

// Shard states relative to now.
const (
	StateFuture = "future"
	StateHot    = "hot"
	StatePast   = "past"
)

// ShardInfo describes one shard.
type ShardInfo struct {
	Table      string
	Start, End time.Time
	// State is StateFuture, StateHot or StatePast.
	State    string
	Capacity store.Capacity
	// Class is the shard's table class ("" the backend's default, or a
	// backend without classes).
	Class store.TableClass
}

// reservedName reports index names whose shard prefix ("name_") would
// cover ebb's own tables. Shards are only ever "name_<seconds>", which
// none of those tables is, so the manager could not drop them anyway; the
// reservation keeps them out of the index's listing and reports.
func reservedName(name string) bool {
	return name == "ebb" || strings.HasPrefix(name, "ebb_") || name == "list"
}

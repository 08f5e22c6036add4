package timeseries

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
)

// TestReservedNames refuses index names that would claim ebb's own tables
// as the index's prefix.
func TestReservedNames(t *testing.T) {
	for _, name := range []string{"ebb", "ebb_meta", "ebb_expiry", "ebb_items", "ebb_x", "list"} {
		c := Config{Name: name, TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 24 * time.Hour}.WithDefaults()
		if err := c.Validate(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("index %q: %v, want a refusal naming the reservation", name, err)
		}
	}
	c := Config{Name: "ebbs", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 24 * time.Hour}.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Errorf("index ebbs: %v", err)
	}
}

// TestNoIndexOwnsForeignTables proves, over every index name that is a
// prefix of one of ebb's own tables (or of tables like them) and every
// table bucket, that the manager never takes such a table for a shard: a
// shard is exactly "<index>_<whole seconds>", which none of them is.
func TestNoIndexOwnsForeignTables(t *testing.T) {
	tables := []string{
		store.MetaTable, "ebb_expiry", "ebb_items",
		"list_0123456789abcdef0123456789abcdef", "list_01234567890123456789012345678901",
		"events_backup", "events_1719446400_old", "events_01719446400",
	}
	buckets := []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}
	for _, table := range tables {
		for i := 1; i <= len(table); i++ {
			index := table[:i]
			if !shardmgr.IndexNamePattern.MatchString(index) {
				continue
			}
			for _, tb := range buckets {
				if _, kind := shardmgr.ParseShardName(index, tb, table); kind == shardmgr.ShardOf {
					t.Errorf("index %q with %s shards would own table %q", index, tb, table)
				}
			}
		}
	}
}

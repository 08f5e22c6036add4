package meter

import "strings"

// Class is what a physical table holds, told from its name.
type Class uint8

// Table classes.
const (
	// ClassOther is any table ebb did not name.
	ClassOther Class = iota
	// ClassIndexShard is one time shard of an index ("events_1719446400").
	ClassIndexShard
	// ClassListFeature is the table of one list feature version
	// ("list_" and 32 hex digits).
	ClassListFeature
	// ClassSharedTable is the physical table shared tables live in
	// ("ebb_items").
	ClassSharedTable
	// ClassExpiryIndex is precise expiry's index ("ebb_expiry").
	ClassExpiryIndex
	// ClassCatalog is ebb's metadata ("ebb_meta": index configs, list
	// features, shared tables, leases, the sweeper's watermark) and any other
	// table of ebb's own.
	ClassCatalog
	numClasses
)

var classNames = [numClasses]string{"other", "index_shard", "list_feature", "shared_table", "expiry_index", "catalog"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "other"
}

// Classes returns every class, in a stable order.
func Classes() []Class {
	out := make([]Class, numClasses)
	for i := range out {
		out[i] = Class(i)
	}
	return out
}

// The names below are those of store.MetaTable, expiry.IndexTable and
// multitable.ItemsTable; a test holds them together. They are spelled out
// here because this package sits below expiry and the features.
const (
	metaTable   = "ebb_meta"
	expiryTable = "ebb_expiry"
	itemsTable  = "ebb_items"
)

// Classify tells a table's class from its name.
func Classify(table string) Class {
	switch {
	case table == metaTable:
		return ClassCatalog
	case table == expiryTable:
		return ClassExpiryIndex
	case table == itemsTable || strings.HasPrefix(table, itemsTable+"_"):
		return ClassSharedTable
	case strings.HasPrefix(table, "ebb_"):
		return ClassCatalog
	case isListTable(table):
		return ClassListFeature
	case isShardTable(table):
		return ClassIndexShard
	}
	return ClassOther
}

// isListTable matches lists' table names: "list_" and 32 lower-case hex
// digits.
func isListTable(name string) bool {
	hex, ok := strings.CutPrefix(name, "list_")
	if !ok || len(hex) != 32 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isShardTable matches shard names: an index name (^[a-z][a-z0-9_]{0,30}$),
// "_", and the shard's start in Unix seconds. "list" is reserved for lists
// (see timeseries), so "list_<digits>" is not a shard.
func isShardTable(name string) bool {
	i := strings.LastIndexByte(name, '_')
	if i < 1 || i > 31 || i == len(name)-1 || name[:i] == "list" {
		return false
	}
	if c := name[0]; c < 'a' || c > 'z' {
		return false
	}
	for j := 1; j < i; j++ {
		if c := name[j]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	for j := i + 1; j < len(name); j++ {
		if c := name[j]; c < '0' || c > '9' {
			return false
		}
	}
	return true
}

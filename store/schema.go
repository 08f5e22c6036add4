package store

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Type is the type of a column.
type Type uint8

// Column types. The zero Type is invalid.
const (
	TypeText      Type = iota + 1 // string, valid UTF-8
	TypeInt64                     // int64
	TypeTimestamp                 // time.Time, millisecond precision, UTC
	TypeBytes                     // []byte
)

func (t Type) String() string {
	switch t {
	case TypeText:
		return "text"
	case TypeInt64:
		return "int64"
	case TypeTimestamp:
		return "timestamp"
	case TypeBytes:
		return "bytes"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Order is a clustering order.
type Order uint8

// Clustering orders. The zero Order is ascending.
const (
	Asc Order = iota
	Desc
)

func (o Order) String() string {
	if o == Desc {
		return "desc"
	}
	return "asc"
}

// Column is a named, typed column.
type Column struct {
	Name string
	Type Type
}

// IndexSpec declares a local secondary index: lookup of rows by the value of
// one value column within one partition (see Store.QueryIndex).
type IndexSpec struct {
	Name   string
	Column string
}

// TableSpec is a table's schema.
//
// Names of tables, columns and indexes match NamePattern. Column names are
// unique across partition, clustering and value columns.
type TableSpec struct {
	Name string
	// PartitionKey has at least one column. Text and bytes partition-key
	// values must be non-empty.
	PartitionKey []Column
	// Clustering may be empty (one row per partition).
	Clustering []Column
	// ClusteringOrder is the order rows are kept and returned in.
	ClusteringOrder Order
	// Values are the non-key columns; at least one.
	Values []Column
	// DefaultTTL, if positive, is applied to every upsert that carries no
	// expiry of its own: expiry = now + DefaultTTL. Zero means none.
	// Millisecond precision.
	DefaultTTL time.Duration
	// Indexes on value columns; at most one index per column.
	Indexes []IndexSpec
	// NeverExpires declares that no row of the table ever expires (such a
	// table is dropped whole, as an index shard is): an upsert or cell
	// with an expiry is refused with ErrInvalid, and a backend may create
	// the table without its per-row expiry machinery (Amazon Keyspaces:
	// TTL left off, which it cannot turn off once on). It excludes
	// DefaultTTL. Equal ignores it, so that a table created before it was
	// declared still matches its spec.
	NeverExpires bool `json:",omitempty"`
}

// Limits shared by every backend, so that an application behaves the same
// wherever it runs. Backends may report tighter row limits in Capabilities.
const (
	// MaxKeyBytes bounds the encoded partition key and, separately, the
	// encoded clustering key of a row (DynamoDB allows 2048 and 1024).
	MaxKeyBytes = 1024
	// MaxNameLen bounds table, column and index names (CQL allows 48).
	MaxNameLen = 48
	// MaxColumns bounds the number of columns of a table.
	MaxColumns = 64
)

// NamePattern is what table, column and index names must match.
var NamePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// Equal reports whether two specs describe the same table.
func (s TableSpec) Equal(o TableSpec) bool {
	return s.Name == o.Name &&
		slices.Equal(s.PartitionKey, o.PartitionKey) &&
		slices.Equal(s.Clustering, o.Clustering) &&
		s.ClusteringOrder == o.ClusteringOrder &&
		slices.Equal(s.Values, o.Values) &&
		s.DefaultTTL == o.DefaultTTL &&
		slices.Equal(s.Indexes, o.Indexes)
}

// Validate checks the spec and returns an error wrapping ErrInvalid.
func (s TableSpec) Validate() error {
	bad := func(format string, args ...any) error {
		return Errorf(ErrInvalid, "table %q: %s", s.Name, fmt.Sprintf(format, args...))
	}
	if !NamePattern.MatchString(s.Name) {
		return bad("table name must match %s", NamePattern)
	}
	if len(s.PartitionKey) == 0 {
		return bad("at least one partition-key column is required")
	}
	if len(s.Values) == 0 {
		return bad("at least one value column is required")
	}
	if n := len(s.PartitionKey) + len(s.Clustering) + len(s.Values); n > MaxColumns {
		return bad("%d columns, at most %d", n, MaxColumns)
	}
	if s.ClusteringOrder != Asc && s.ClusteringOrder != Desc {
		return bad("unknown clustering order %d", s.ClusteringOrder)
	}
	if s.DefaultTTL < 0 {
		return bad("negative default TTL")
	}
	if s.NeverExpires && s.DefaultTTL > 0 {
		return bad("a default TTL on a table whose rows never expire")
	}
	seen := map[string]bool{}
	for _, group := range [][]Column{s.PartitionKey, s.Clustering, s.Values} {
		for _, c := range group {
			if !NamePattern.MatchString(c.Name) {
				return bad("column name %q must match %s", c.Name, NamePattern)
			}
			if seen[c.Name] {
				return bad("duplicate column %q", c.Name)
			}
			seen[c.Name] = true
			if c.Type < TypeText || c.Type > TypeBytes {
				return bad("column %q has unknown type %d", c.Name, c.Type)
			}
		}
	}
	indexed := map[string]bool{}
	names := map[string]bool{}
	for _, ix := range s.Indexes {
		if !NamePattern.MatchString(ix.Name) {
			return bad("index name %q must match %s", ix.Name, NamePattern)
		}
		if names[ix.Name] {
			return bad("duplicate index %q", ix.Name)
		}
		names[ix.Name] = true
		if !slices.ContainsFunc(s.Values, func(c Column) bool { return c.Name == ix.Column }) {
			return bad("index %q: %q is not a value column", ix.Name, ix.Column)
		}
		if indexed[ix.Column] {
			return bad("column %q indexed twice", ix.Column)
		}
		indexed[ix.Column] = true
	}
	return nil
}

// ValueIndex returns the position of the named value column, or -1.
func (s TableSpec) ValueIndex(name string) int {
	return slices.IndexFunc(s.Values, func(c Column) bool { return c.Name == name })
}

// Index returns the named index and whether it exists.
func (s TableSpec) Index(name string) (IndexSpec, bool) {
	i := slices.IndexFunc(s.Indexes, func(ix IndexSpec) bool { return ix.Name == name })
	if i < 0 {
		return IndexSpec{}, false
	}
	return s.Indexes[i], true
}

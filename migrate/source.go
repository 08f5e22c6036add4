package migrate

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// Row is one event of a legacy table with its native expiry.
type Row struct {
	timeseries.Event
	// ExpiresAt is the row's native TTL; zero when it has none.
	ExpiresAt time.Time
}

// Range selects the events of one index_id from a legacy table.
type Range struct {
	IndexID string
	// Lo and Hi bound the timestamps in Unix ms: [Lo, Hi).
	Lo, Hi int64
	// After, when set, resumes strictly after that event in the query's
	// order; it lies within [Lo, Hi).
	After *timeseries.Position
	// Desc orders by (timestamp, event_id) descending.
	Desc  bool
	Limit int
}

// Source is a legacy table. Implementations are safe for concurrent use.
// One that holds resources of its own (a connection to another cluster)
// implements io.Closer too: the Service closes it once it no longer uses
// it (the migration ended, or the Service closed).
type Source interface {
	// Query returns up to r.Limit live rows of r (expired by native TTL at
	// now never), ordered by (timestamp, event_id), reversed for Desc,
	// and whether more may follow.
	Query(ctx context.Context, r Range, now time.Time) (rows []Row, more bool, err error)
	// Write upserts rows, each with its ExpiresAt as native TTL. It is
	// idempotent.
	Write(ctx context.Context, rows []Row) error
	// Scan reads the whole table in the source's own order, one page at a
	// time, from cursor (nil: the start), expired rows included; it
	// returns the cursor of the next page (nil at the end) and the read
	// units the page cost where the backend reports them.
	Scan(ctx context.Context, cursor []byte, limit int) (rows []Row, next []byte, units float64, err error)
	// Estimate returns the number of rows stored, expired ones included:
	// an estimate on remote backends.
	Estimate(ctx context.Context) (int64, error)
}

// Source kinds of LegacyConfig.Kind.
const (
	// KindTable is an ebb table in the embedded layout (TableSource), in
	// the same backend as the index.
	KindTable = "table"
	// KindDynamoDB is an existing DynamoDB table mapped onto the index's
	// fields (package migrate/dynamolegacy).
	KindDynamoDB = "dynamodb"
	// KindCQL is an existing Cassandra, ScyllaDB or Amazon Keyspaces table
	// mapped onto the index's fields (package migrate/cqllegacy).
	KindCQL = "cql"
)

// LegacyConfig names an index's legacy table.
type LegacyConfig struct {
	// Kind is KindTable, KindDynamoDB or KindCQL.
	Kind string `json:"kind"`
	// Table is the legacy table's name, as the backend knows it; for
	// KindCQL "keyspace.table", each as the cluster's schema spells it.
	Table string `json:"table"`
	// TTL is the expiry ebb gives the rows it writes to the legacy table
	// (timestamp + TTL); zero means the index's retention.
	TTL time.Duration `json:"ttl,omitempty"`
	// Endpoint and Region reach DynamoDB when the index's own backend is
	// not DynamoDB (or is another endpoint); empty means the backend's
	// client, or the AWS SDK's defaults. For KindCQL, Endpoint is the
	// cluster's contact points, "host[:port],..." when it is not the
	// backend's own cluster; empty means the backend's session.
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	// Mapping maps a DynamoDB table's attributes, or a CQL table's
	// columns, onto the index's fields; required for KindDynamoDB and
	// KindCQL.
	Mapping *Mapping `json:"mapping,omitempty"`
}

// OwnTable is the name of index's own embedded legacy table. Embedded
// legacy tables share one namespace with every index, so the server lets a
// token scoped to an index name this table alone: any other legacy source
// may hold, or be meant for, another index's events.
func OwnTable(index string) string { return index + "_legacy" }

// OwnedBy reports whether c is index's own legacy source: the embedded
// table OwnTable(index), reached through the index's own backend. Every
// other source (another embedded table, a DynamoDB or CQL table, with or
// without an endpoint) is reached with the server's credentials and from
// its network, and is the operator's to grant.
func (c LegacyConfig) OwnedBy(index string) bool {
	return c.Kind == KindTable && c.Table == OwnTable(index) && c.Endpoint == "" && c.Region == "" && c.Mapping == nil
}

// ErrLegacyCredentials is a legacy table's backend (DynamoDB or CQL)
// refusing the server's credentials, or the server finding none for it:
// the server's configuration is at fault, not the request, and retrying
// does not help until an operator fixes it.
var ErrLegacyCredentials = store.Mark(nil, "migrate", "the legacy table's backend refused the server's credentials, or there are none")

// Sort-key formats of Mapping.SortKeyFormat.
const (
	// SortTimestampEventID: a string "<Unix ms, 13 digits>#<event_id>",
	// ordered like the index.
	SortTimestampEventID = "timestamp_event_id"
	// SortTimestampMs: a number, the Unix ms timestamp (on CQL a bigint
	// or a timestamp column); the event id is in Mapping.EventID. On
	// DynamoDB, and on CQL when the event id is not a clustering column,
	// that is one event per (index_id, ms).
	SortTimestampMs = "timestamp_ms"
)

// Mapping maps a DynamoDB table's key and attribute names, or a CQL
// table's column names, onto the index's fields (index id, timestamp,
// event id, payload) and its native TTL.
type Mapping struct {
	// IndexID is the partition key attribute (a string); on CQL the
	// partition key, a single text column.
	IndexID string `json:"index_id"`
	// SortKey is the sort key attribute, in SortKeyFormat; on CQL the
	// first clustering column. On CQL an empty SortKeyFormat follows the
	// column's type: text is SortTimestampEventID, bigint and timestamp
	// SortTimestampMs.
	SortKey       string `json:"sort_key"`
	SortKeyFormat string `json:"sort_key_format,omitempty"`
	// EventID is the event id attribute (a string); required with
	// SortTimestampMs, unused with SortTimestampEventID. On CQL it is the
	// clustering column after SortKey, or a regular column.
	EventID string `json:"event_id,omitempty"`
	// Payload is the payload attribute (binary; a string is read as its
	// bytes). Absent means an empty payload. On CQL a blob or text
	// column.
	Payload string `json:"payload"`
	// TTL is the native TTL attribute (a number, Unix seconds). On CQL,
	// where TTL is native to every cell, it optionally names the regular
	// column whose TTL() is the row's; empty means Payload's.
	TTL string `json:"ttl,omitempty"`
}

var attrPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,255}$`)

// Validate checks c; errors wrap store.ErrInvalid.
func (c LegacyConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "legacy: %s", fmt.Sprintf(format, args...))
	}
	if c.TTL < 0 {
		return bad("ttl %s is negative", c.TTL)
	}
	switch c.Kind {
	case KindTable:
		if !tableNamePattern.MatchString(c.Table) {
			return bad("table %q must match %s", c.Table, tableNamePattern)
		}
		if c.Mapping != nil || c.Endpoint != "" || c.Region != "" {
			return bad("mapping, endpoint and region are for kinds dynamodb and cql")
		}
	case KindDynamoDB:
		if !dynamoTablePattern.MatchString(c.Table) {
			return bad("table %q is not a DynamoDB table name", c.Table)
		}
		m := c.Mapping
		if m == nil {
			return bad("kind dynamodb needs a mapping (index_id, sort_key, sort_key_format, payload, ttl)")
		}
		for _, a := range []struct{ field, v string }{{"index_id", m.IndexID}, {"sort_key", m.SortKey}, {"payload", m.Payload}, {"ttl", m.TTL}} {
			if !attrPattern.MatchString(a.v) {
				return bad("mapping.%s %q is not an attribute name", a.field, a.v)
			}
		}
		switch m.SortKeyFormat {
		case SortTimestampEventID:
		case SortTimestampMs:
			if !attrPattern.MatchString(m.EventID) {
				return bad("mapping.event_id is required with sort_key_format %s", SortTimestampMs)
			}
		default:
			return bad("mapping.sort_key_format %q: want %s or %s", m.SortKeyFormat, SortTimestampEventID, SortTimestampMs)
		}
	case KindCQL:
		if !cqlTablePattern.MatchString(c.Table) {
			return bad("table %q: want keyspace.table (letters, digits and _)", c.Table)
		}
		if c.Region != "" {
			return bad("region is for kind dynamodb")
		}
		if c.Endpoint != "" {
			for _, h := range strings.Split(c.Endpoint, ",") {
				if strings.TrimSpace(h) == "" {
					return bad("endpoint %q: want host[:port],... (the cluster's contact points)", c.Endpoint)
				}
			}
		}
		m := c.Mapping
		if m == nil {
			return bad("kind cql needs a mapping (index_id, sort_key, event_id, payload)")
		}
		for _, a := range []struct{ field, v string }{{"index_id", m.IndexID}, {"sort_key", m.SortKey}, {"payload", m.Payload}} {
			if !attrPattern.MatchString(a.v) {
				return bad("mapping.%s %q is not a column name", a.field, a.v)
			}
		}
		for _, a := range []struct{ field, v string }{{"event_id", m.EventID}, {"ttl", m.TTL}} {
			if a.v != "" && !attrPattern.MatchString(a.v) {
				return bad("mapping.%s %q is not a column name", a.field, a.v)
			}
		}
		switch m.SortKeyFormat {
		case "", SortTimestampEventID:
		case SortTimestampMs:
			if m.EventID == "" {
				return bad("mapping.event_id is required with sort_key_format %s", SortTimestampMs)
			}
		default:
			return bad("mapping.sort_key_format %q: want %s, %s or none (from the column's type)", m.SortKeyFormat, SortTimestampEventID, SortTimestampMs)
		}
	default:
		return bad("kind %q: want %s, %s or %s", c.Kind, KindTable, KindDynamoDB, KindCQL)
	}
	return nil
}

var (
	// tableNamePattern is an embedded legacy table's name. It may not end
	// in _<digits>, which would read as some index's shard.
	tableNamePattern   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,46}[a-z]$`)
	dynamoTablePattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]{3,255}$`)
	// cqlTablePattern is "keyspace.table" as CQL names them.
	cqlTablePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}\.[A-Za-z0-9_]{1,48}$`)
)

package migrate

import (
	"context"
	"fmt"
	"regexp"
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
)

// LegacyConfig names an index's legacy table.
type LegacyConfig struct {
	// Kind is KindTable or KindDynamoDB.
	Kind string `json:"kind"`
	// Table is the legacy table's name, as the backend knows it.
	Table string `json:"table"`
	// TTL is the expiry ebb gives the rows it writes to the legacy table
	// (timestamp + TTL); zero means the index's retention.
	TTL time.Duration `json:"ttl,omitempty"`
	// Endpoint and Region reach DynamoDB when the index's own backend is
	// not DynamoDB (or is another endpoint); empty means the backend's
	// client, or the AWS SDK's defaults.
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	// Mapping maps a DynamoDB table's attributes onto the index's fields;
	// required for KindDynamoDB.
	Mapping *Mapping `json:"mapping,omitempty"`
}

// Sort-key formats of Mapping.SortKeyFormat.
const (
	// SortTimestampEventID: a string "<Unix ms, 13 digits>#<event_id>",
	// ordered like the index.
	SortTimestampEventID = "timestamp_event_id"
	// SortTimestampMs: a number, the Unix ms timestamp; the event id is in
	// Mapping.EventID, one event per (index_id, ms).
	SortTimestampMs = "timestamp_ms"
)

// Mapping maps a DynamoDB table's key and attribute names onto the
// index's fields (index id, timestamp, event id, payload) and its native
// TTL attribute.
type Mapping struct {
	// IndexID is the partition key attribute (a string).
	IndexID string `json:"index_id"`
	// SortKey is the sort key attribute, in SortKeyFormat.
	SortKey       string `json:"sort_key"`
	SortKeyFormat string `json:"sort_key_format"`
	// EventID is the event id attribute (a string); required with
	// SortTimestampMs, unused with SortTimestampEventID.
	EventID string `json:"event_id,omitempty"`
	// Payload is the payload attribute (binary; a string is read as its
	// bytes). Absent means an empty payload.
	Payload string `json:"payload"`
	// TTL is the native TTL attribute (a number, Unix seconds).
	TTL string `json:"ttl"`
}

var attrPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,255}$`)

// Validate checks c; errors wrap store.ErrInvalid.
func (c LegacyConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: legacy: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
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
			return bad("mapping, endpoint and region are for kind dynamodb")
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
	default:
		return bad("kind %q: want %s or %s", c.Kind, KindTable, KindDynamoDB)
	}
	return nil
}

var (
	// tableNamePattern is an embedded legacy table's name. It may not end
	// in _<digits>, which would read as some index's shard.
	tableNamePattern   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,46}[a-z]$`)
	dynamoTablePattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]{3,255}$`)
)

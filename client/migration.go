package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Migration phases, in rollout order (docs/migration.md).
const (
	PhaseShadowWrite = "shadow-write"
	PhaseShadowRead  = "shadow-read"
	PhaseMergedRead  = "merged-read"
	PhaseCutover     = "cutover"
)

// LegacyTable names an index's legacy table: kind "table" (an ebb table
// in the embedded layout, created empty if missing), "dynamodb" (an
// existing DynamoDB table, with Mapping) or "cql" (an existing Cassandra,
// ScyllaDB or Keyspaces table, "keyspace.table", with Mapping; Endpoint
// is then the cluster's contact points when it is not the server's).
type LegacyTable struct {
	Kind  string `json:"kind"`
	Table string `json:"table"`
	// TTL is the expiry ebb gives rows it writes to the legacy table, a
	// Go duration string; empty means the index's retention.
	TTL      string         `json:"ttl,omitempty"`
	Endpoint string         `json:"endpoint,omitempty"`
	Region   string         `json:"region,omitempty"`
	Mapping  *LegacyMapping `json:"mapping,omitempty"`
}

// LegacyMapping maps a DynamoDB table's attributes, or a CQL table's
// columns, onto the index's fields. SortKeyFormat is "timestamp_event_id"
// (a string "<13-digit Unix ms>#<event id>") or "timestamp_ms" (a number,
// with the event id in EventID); on CQL, empty follows the sort key
// column's type. TTL is DynamoDB's TTL attribute; on CQL, optionally the
// column whose TTL() is the row's (default Payload's).
type LegacyMapping struct {
	IndexID       string `json:"index_id"`
	SortKey       string `json:"sort_key"`
	SortKeyFormat string `json:"sort_key_format,omitempty"`
	EventID       string `json:"event_id,omitempty"`
	Payload       string `json:"payload"`
	TTL           string `json:"ttl,omitempty"`
}

// MigrationSettings start a migration (PUT /v1/indexes/{name}/migration).
type MigrationSettings struct {
	Legacy        LegacyTable `json:"legacy"`
	WriteLegacy   bool        `json:"write_legacy"`
	SamplePercent float64     `json:"sample_percent"`
}

// Migration is an index's migration as the server reports it.
type Migration struct {
	Index         string      `json:"index"`
	Phase         string      `json:"phase"`
	Legacy        LegacyTable `json:"legacy"`
	WriteLegacy   bool        `json:"write_legacy"`
	SamplePercent float64     `json:"sample_percent"`
	StartedAt     time.Time   `json:"started_at"`
	PhaseSince    time.Time   `json:"phase_since"`
	CutoverAt     *time.Time  `json:"cutover_at,omitempty"`
	History       []struct {
		From   string    `json:"from"`
		To     string    `json:"to"`
		At     time.Time `json:"at"`
		Forced bool      `json:"forced,omitempty"`
	} `json:"history"`
	Counters struct {
		ShadowWriteFailures int64            `json:"shadow_write_failures"`
		ShadowReadFailures  int64            `json:"shadow_read_failures"`
		ReadsCompared       int64            `json:"reads_compared"`
		Mismatches          map[string]int64 `json:"mismatches"`
		MismatchSample      []struct {
			Kind      string    `json:"kind"`
			IndexID   string    `json:"index_id"`
			EventID   string    `json:"event_id"`
			Timestamp time.Time `json:"timestamp"`
			At        time.Time `json:"at"`
		} `json:"mismatch_sample"`
	} `json:"counters"`
	Backfill           *Backfill  `json:"backfill,omitempty"`
	BackfillRunning    bool       `json:"backfill_running"`
	CutoverReady       bool       `json:"cutover_ready"`
	CutoverBlockedBy   string     `json:"cutover_blocked_by,omitempty"`
	LegacyLiveRows     *int64     `json:"legacy_live_rows,omitempty"`
	LegacyNewestExpiry *time.Time `json:"legacy_newest_expiry,omitempty"`
	LegacyDeletable    bool       `json:"legacy_deletable"`
}

// Backfill is a backfill's checkpoint.
type Backfill struct {
	Pass             int        `json:"pass"`
	DryRun           bool       `json:"dry_run"`
	Done             bool       `json:"done"`
	StartedAt        time.Time  `json:"started_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	Scanned          int64      `json:"scanned"`
	Copied           int64      `json:"copied"`
	SkippedExpired   int64      `json:"skipped_expired"`
	SkippedRetention int64      `json:"skipped_retention"`
	SkippedNoShard   int64      `json:"skipped_no_shard"`
	Units            float64    `json:"units"`
	TotalEstimate    int64      `json:"total_estimate"`
	RowsPerSecond    float64    `json:"rows_per_second"`
	ETA              string     `json:"eta"`
	Error            string     `json:"error,omitempty"`
}

// BackfillOptions start a backfill (POST .../migration/backfill).
type BackfillOptions struct {
	RowsPerSecond  float64 `json:"rows_per_second,omitempty"`
	UnitsPerSecond float64 `json:"units_per_second,omitempty"`
	BatchSize      int     `json:"batch_size,omitempty"`
	DryRun         bool    `json:"dry_run,omitempty"`
	Restart        bool    `json:"restart,omitempty"`
}

// LegacyRow is one row to write to a legacy table (an import).
type LegacyRow struct {
	IndexID   string     `json:"index_id"`
	EventID   string     `json:"event_id"`
	Timestamp time.Time  `json:"timestamp"`
	Payload   []byte     `json:"payload"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// StartMigration starts migrating an index off a legacy table, in phase
// shadow-write (PUT /v1/indexes/{name}/migration). created is false when
// it was already migrating from that table.
func (c *Client) StartMigration(ctx context.Context, index string, s MigrationSettings) (m Migration, created bool, err error) {
	p, err := indexPath(index, "/migration")
	if err != nil {
		return Migration{}, false, err
	}
	status, err := c.do(ctx, http.MethodPut, p, nil, s, &m)
	return m, status == http.StatusCreated, err
}

// Migration returns an index's migration (GET /v1/indexes/{name}/migration);
// ErrNotFound when it has none.
func (c *Client) Migration(ctx context.Context, index string) (Migration, error) {
	p, err := indexPath(index, "/migration")
	if err != nil {
		return Migration{}, err
	}
	var m Migration
	_, err = c.do(ctx, http.MethodGet, p, nil, nil, &m)
	return m, err
}

// SetMigrationPhase changes an index's migration phase (POST
// /v1/indexes/{name}/migration/phase). A change the rules refuse is
// ErrConflict, saying why; force overrides the rules.
func (c *Client) SetMigrationPhase(ctx context.Context, index, phase string, force bool) (Migration, error) {
	p, err := indexPath(index, "/migration/phase")
	if err != nil {
		return Migration{}, err
	}
	var m Migration
	_, err = c.do(ctx, http.MethodPost, p, nil, map[string]any{"phase": phase, "force": force}, &m)
	return m, err
}

// EndMigration forgets an index's migration (DELETE
// /v1/indexes/{name}/migration); only one in cutover ends unless forced.
func (c *Client) EndMigration(ctx context.Context, index string, force bool) error {
	p, err := indexPath(index, "/migration")
	if err != nil {
		return err
	}
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	_, err = c.do(ctx, http.MethodDelete, p, q, nil, nil)
	return err
}

// StartBackfill starts a backfill in the server (POST
// /v1/indexes/{name}/migration/backfill); poll Migration for progress.
func (c *Client) StartBackfill(ctx context.Context, index string, o BackfillOptions) (Migration, error) {
	p, err := indexPath(index, "/migration/backfill")
	if err != nil {
		return Migration{}, err
	}
	var m Migration
	_, err = c.do(ctx, http.MethodPost, p, nil, o, &m)
	return m, err
}

// StopBackfill stops a running backfill; its checkpoint keeps its
// progress (DELETE /v1/indexes/{name}/migration/backfill).
func (c *Client) StopBackfill(ctx context.Context, index string) error {
	p, err := indexPath(index, "/migration/backfill")
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil, nil)
	return err
}

// WriteLegacyRows writes up to 10000 rows to an index's legacy table
// (POST /v1/indexes/{name}/migration/legacy-rows) and returns how many
// were written: rows already expired are not.
func (c *Client) WriteLegacyRows(ctx context.Context, index string, rows []LegacyRow) (int, error) {
	p, err := indexPath(index, "/migration/legacy-rows")
	if err != nil {
		return 0, err
	}
	if rows == nil {
		rows = []LegacyRow{}
	}
	var out struct {
		Written int `json:"written"`
	}
	_, err = c.do(ctx, http.MethodPost, p, nil, map[string][]LegacyRow{"rows": rows}, &out)
	return out.Written, err
}

package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// AdminTables is the answer of GET /v1/admin/tables.
type AdminTables struct {
	// Tables are the backend's physical tables, sorted by name.
	Tables []PhysicalTable `json:"tables"`
	// LogicalTables are the shared tables kept in the physical table
	// ebb_items.
	LogicalTables []LogicalTable `json:"logical_tables"`
}

// PhysicalTable is one table the backend holds.
type PhysicalTable struct {
	Name string `json:"name"`
	// Rows counts rows physically present, expired rows not yet deleted
	// included: exact on the embedded backend, an estimate elsewhere.
	Rows int64 `json:"rows"`
	// Bytes is the backend's estimate of the table's size on disk.
	Bytes int64 `json:"bytes"`
	// Capacity is "on_demand" or "provisioned".
	Capacity string `json:"capacity"`
}

// LogicalTable is one shared table's usage.
type LogicalTable struct {
	Name       string        `json:"name"`
	DefaultTTL time.Duration `json:"default_ttl"`
	// Items counts live items; Bytes sums their keys, compact attribute
	// documents and 8-byte timestamps.
	Items int64 `json:"items"`
	Bytes int64 `json:"bytes"`
	// Expiry is the table's expiry mode.
	Expiry ExpiryMode `json:"expiry"`
}

// MarshalJSON writes a LogicalTable as the API does, durations as Go duration strings.
func (t LogicalTable) MarshalJSON() ([]byte, error) {
	type plain LogicalTable
	return json.Marshal(struct {
		plain
		DefaultTTL duration `json:"default_ttl"`
	}{plain(t), duration(t.DefaultTTL)})
}

// UnmarshalJSON reads a LogicalTable as the API writes it.
func (t *LogicalTable) UnmarshalJSON(b []byte) error {
	type plain LogicalTable
	w := struct {
		*plain
		DefaultTTL duration `json:"default_ttl"`
	}{plain: (*plain)(t)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t.DefaultTTL = time.Duration(w.DefaultTTL)
	return nil
}

// Cluster is the answer of GET /v1/admin/cluster: who runs each background
// role, from the answering replica's point of view.
type Cluster struct {
	// Replica is the answering replica's ID.
	Replica string  `json:"replica"`
	Leases  []Lease `json:"leases"`
	// Backend names the backend ("pebble", "dynamodb", "cql").
	Backend string `json:"backend,omitempty"`
	// Capabilities says what the backend can do.
	Capabilities *Capabilities `json:"capabilities,omitempty"`
}

// Capabilities is what a backend can do, as GET /v1/admin/cluster reports
// it.
type Capabilities struct {
	// AtomicPartitionBatch: a batch of up to MaxAtomicBatch writes to one
	// partition is all or nothing.
	AtomicPartitionBatch bool `json:"atomic_partition_batch"`
	MaxAtomicBatch       int  `json:"max_atomic_batch"`
	// MaxRowBytes bounds one row's stored size.
	MaxRowBytes int `json:"max_row_bytes"`
	// NativeTTL: the backend also removes expired rows on its own.
	NativeTTL bool `json:"native_ttl"`
	// WarmThroughput: pre-warming uses the backend's warm throughput.
	WarmThroughput bool `json:"warm_throughput"`
	// DropKeepsSnapshot: a dropped table's files stay on disk until an
	// operator clears them.
	DropKeepsSnapshot bool `json:"drop_keeps_snapshot"`
	// SharedAcrossProcesses: several replicas share the data, and the
	// background roles run under leases.
	SharedAcrossProcesses bool `json:"shared_across_processes"`
}

// Lease is one background role's lease as the replica last read or wrote
// it.
type Lease struct {
	// Role is "shard-manager" or "sweeper".
	Role string `json:"role"`
	// Holder is empty when no replica ever took the lease.
	Holder string `json:"holder"`
	Epoch  int64  `json:"epoch"`
	// Expires is zero when the lease was never taken.
	Expires time.Time `json:"expires,omitzero"`
	// HeldHere says whether the answering replica holds it now.
	HeldHere bool `json:"held_here"`
}

// AdminTables reports every physical table and every shared table
// (GET /v1/admin/tables; scope admin).
func (c *Client) AdminTables(ctx context.Context) (AdminTables, error) {
	var out AdminTables
	_, err := c.do(ctx, http.MethodGet, "/v1/admin/tables", nil, nil, &out)
	return out, err
}

// Cluster reports the background roles' leases (GET /v1/admin/cluster;
// scope admin).
func (c *Client) Cluster(ctx context.Context) (Cluster, error) {
	var out Cluster
	_, err := c.do(ctx, http.MethodGet, "/v1/admin/cluster", nil, nil, &out)
	return out, err
}

// Health returns nil when the server is serving (GET /healthz: liveness).
// It needs no token.
func (c *Client) Health(ctx context.Context) error {
	var out struct {
		Status string `json:"status"`
	}
	_, err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, &out)
	return err
}

// Ready returns nil once the server's backend answers and its shard
// manager has completed a pass (GET /readyz), and otherwise an *APIError
// matching ErrUnavailable whose message gives the reason. It needs no
// token.
func (c *Client) Ready(ctx context.Context) error {
	resp, data, err := c.roundTrip(ctx, http.MethodGet, "/readyz", nil, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	e := decodeError(resp, data)
	var body struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	if e.Code == "" && e.Status == http.StatusServiceUnavailable && json.Unmarshal(data, &body) == nil && body.Status != "" {
		e.Code, e.Message = CodeUnavailable, body.Status+": "+body.Reason
	}
	return e
}

// Metrics returns the server's metrics in the Prometheus text format
// (GET /metrics). With an auth file it needs the metrics or admin scope.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	_, data, err := c.send(ctx, http.MethodGet, "/metrics", nil, nil)
	return data, err
}

// Backup is the answer of POST /v1/admin/backup.
type Backup struct {
	// Dir is the backup's directory on the server's file system.
	Dir   string        `json:"dir"`
	Bytes int64         `json:"bytes"`
	Took  time.Duration `json:"took"`
}

// MarshalJSON writes a Backup as the API does, durations as Go duration strings.
func (b Backup) MarshalJSON() ([]byte, error) {
	type plain Backup
	return json.Marshal(struct {
		plain
		Took duration `json:"took"`
	}{plain(b), duration(b.Took)})
}

// UnmarshalJSON reads a Backup as the API writes it.
func (b *Backup) UnmarshalJSON(data []byte) error {
	type plain Backup
	w := struct {
		*plain
		Took duration `json:"took"`
	}{plain: (*plain)(b)}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	b.Took = time.Duration(w.Took)
	return nil
}

// Backup writes a consistent checkpoint of the server's embedded store into
// dir, an absolute path on the server's file system that must not exist
// (POST /v1/admin/backup; scope admin). A remote backend is
// ErrInvalidArgument, an existing dir ErrConflict.
func (c *Client) Backup(ctx context.Context, dir string) (Backup, error) {
	var out Backup
	_, err := c.do(ctx, http.MethodPost, "/v1/admin/backup", nil, map[string]string{"to": dir}, &out)
	return out, err
}

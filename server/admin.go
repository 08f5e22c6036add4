package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
)

// Admin is what the admin routes read; *ebb.DB implements it.
type Admin interface {
	// PhysicalTables lists the backend's tables with what they store.
	PhysicalTables(ctx context.Context) ([]ebb.TableUsage, error)
	// SharedTableUsage reports every shared (logical) table.
	SharedTableUsage(ctx context.Context) ([]multitable.TableUsage, error)
	// Cluster reports this replica's ID and each background role's lease.
	Cluster() (replica string, roles []ebb.ReplicaStatus)
	// Ready returns nil once the replica can serve (GET /readyz).
	Ready(ctx context.Context) error
	// Backup writes a consistent copy of the embedded store into a new
	// directory on the server's file system.
	Backup(ctx context.Context, dir string) (ebb.Backup, error)
}

var _ Admin = (*ebb.DB)(nil)

// routeAdmin registers the administrative routes (API.md "Admin"), which
// only the admin scope reaches.
func (s *Server) routeAdmin() {
	s.Route("GET /v1/admin/tables", AdminResource, s.adminTables)
	s.Route("GET /v1/admin/cluster", AdminResource, s.adminCluster)
	s.Route("POST /v1/admin/backup", AdminResource, s.adminBackup)
	if _, ok := s.admin.(UsageReporter); ok {
		s.Route("GET /v1/admin/usage", AdminResource, s.adminUsage, "cost", "gone_within", "storage")
	}
}

// adminBackup takes a checkpoint of the embedded store into the directory
// the body names, on the server's own file system.
func (s *Server) adminBackup(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		To string `json:"to"`
	}
	if err := DecodeJSON(r, &req); err != nil {
		return err
	}
	if req.To == "" {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "to: the backup directory is required")
	}
	b, err := s.admin.Backup(r.Context(), req.To)
	if err != nil {
		return err
	}
	s.log.Info("backup taken", "dir", b.Dir, "bytes", b.Bytes, "took", b.Took)
	return WriteJSON(w, http.StatusOK, map[string]any{"dir": b.Dir, "bytes": b.Bytes, "took": b.Took.String()})
}

// tableJSON is one table in GET /v1/admin/tables.
type tableJSON struct {
	Name string `json:"name"`
	// Rows counts rows physically present, expired ones not yet deleted
	// included: what the table costs, not what a query returns.
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
	Capacity string `json:"capacity"`
}

func (s *Server) adminTables(w http.ResponseWriter, r *http.Request) error {
	tables, err := s.admin.PhysicalTables(r.Context())
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	out := make([]tableJSON, 0, len(tables))
	for _, t := range tables {
		out = append(out, tableJSON{Name: t.Name, Rows: t.Rows, Bytes: t.Bytes, Capacity: t.Capacity.Mode.String()})
	}
	// Shared tables (tables.go): per logical table items and bytes, since
	// many of them share one physical table above.
	logical, err := s.logicalTableUsage(r.Context())
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, map[string]any{"tables": out, "logical_tables": logical})
}

// leaseJSON is one background role in GET /v1/admin/cluster.
type leaseJSON struct {
	Role string `json:"role"`
	// Holder is the replica holding the lease as last seen; empty when
	// no replica ever took it.
	Holder  string `json:"holder"`
	Epoch   int64  `json:"epoch"`
	Expires string `json:"expires,omitempty"`
	// HeldHere: the replica answering holds it now.
	HeldHere bool `json:"held_here"`
}

func (s *Server) adminCluster(w http.ResponseWriter, _ *http.Request) error {
	replica, roles := s.admin.Cluster()
	out := make([]leaseJSON, 0, len(roles))
	for _, r := range roles {
		l := leaseJSON{Role: r.Role, Holder: r.Holder, Epoch: r.Epoch, HeldHere: r.Held}
		if !r.Expires.IsZero() {
			l.Expires = timefmt.Format(r.Expires)
		}
		out = append(out, l)
	}
	body := map[string]any{"replica": replica, "leases": out}
	// The backend and what it can do, when the Admin knows (an *ebb.DB
	// does): the dashboard and operators read them here.
	if b, ok := s.admin.(interface{ Capabilities() store.Capabilities }); ok {
		c := b.Capabilities()
		body["backend"] = c.Backend
		body["capabilities"] = capabilitiesJSON{
			AtomicPartitionBatch: c.AtomicPartitionBatch, MaxAtomicBatch: c.MaxAtomicBatch,
			MaxRowBytes: c.MaxRowBytes, NativeTTL: c.NativeTTL, WarmThroughput: c.WarmThroughput,
			DropKeepsSnapshot: c.DropKeepsSnapshot, SharedAcrossProcesses: c.SharedAcrossProcesses,
		}
	}
	return WriteJSON(w, http.StatusOK, body)
}

// capabilitiesJSON is the backend's store.Capabilities in GET
// /v1/admin/cluster.
type capabilitiesJSON struct {
	AtomicPartitionBatch  bool `json:"atomic_partition_batch"`
	MaxAtomicBatch        int  `json:"max_atomic_batch"`
	MaxRowBytes           int  `json:"max_row_bytes"`
	NativeTTL             bool `json:"native_ttl"`
	WarmThroughput        bool `json:"warm_throughput"`
	DropKeepsSnapshot     bool `json:"drop_keeps_snapshot"`
	SharedAcrossProcesses bool `json:"shared_across_processes"`
}

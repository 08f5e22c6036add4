package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/ebb-data/ebb/store"
)

// routeAdmin registers the administrative routes (API.md "Admin"), which
// every Server has and only the admin scope reaches.
func (s *Server) routeAdmin() {
	s.Route("GET /v1/admin/tables", AdminResource, s.adminTables)
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
	infos, err := s.store.Tables(r.Context(), "")
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	out := make([]tableJSON, 0, len(infos))
	for _, info := range infos {
		st, err := s.store.Stats(r.Context(), info.Spec.Name)
		if errors.Is(err, store.ErrTableNotFound) {
			continue // dropped since it was listed
		}
		if err != nil {
			return fmt.Errorf("stats of %s: %w", info.Spec.Name, err)
		}
		out = append(out, tableJSON{
			Name:     info.Spec.Name,
			Rows:     st.Rows,
			Bytes:    st.Bytes,
			Capacity: info.Capacity.Mode.String(),
		})
	}
	// Shared tables (tables.go): per logical table items and bytes, since
	// many of them share one physical table above.
	logical, err := s.logicalTableUsage(r.Context())
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, map[string]any{"tables": out, "logical_tables": logical})
}

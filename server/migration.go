package server

import (
	"encoding/base64"
	"fmt"
	"net/http"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/timeseries"
)

// Migrations serves the migrations of indexes off legacy tables
// (docs/migration.md) on svc, under /v1/indexes/{name}/migration.
//
// A token scoped to an index reaches the index's migration routes, but
// names only the index's own legacy table (migrate.OwnTable): every other
// legacy source needs the admin scope, to start a migration from it and
// to import rows into it. Embedded legacy tables share one namespace, so
// another name may hold another index's events, or be one another index
// will use; a DynamoDB or CQL table, and any endpoint, is reached with
// the server's credentials from the server's network.
func Migrations(svc *migrate.Service) Feature {
	return func(s *Server) {
		h := migrationHandlers{svc: svc, s: s}
		mapMigrationErrors(s)
		byName := ResourceFromPath(KindIndex, "name")
		s.Route("GET /v1/indexes/{name}/migration", byName, h.status)
		s.Route("PUT /v1/indexes/{name}/migration", byName, h.start)
		s.Route("DELETE /v1/indexes/{name}/migration", byName, h.end, "force")
		s.Route("POST /v1/indexes/{name}/migration/phase", byName, h.phase)
		s.Route("POST /v1/indexes/{name}/migration/backfill", byName, h.backfill)
		s.Route("DELETE /v1/indexes/{name}/migration/backfill", byName, h.stopBackfill)
		s.Route("POST /v1/indexes/{name}/migration/legacy-rows", byName, h.legacyRows)
	}
}

// mapMigrationErrors maps what the migration routes refuse that no store
// sentinel covers: a legacy backend refusing the server's credentials, and
// the index feature's refusals of the events they write.
func mapMigrationErrors(s *Server) {
	s.MapError(migrate.ErrLegacyCredentials, http.StatusBadGateway, CodeBadGateway)
	mapIndexErrors(s)
}

type migrationHandlers struct {
	svc *migrate.Service
	s   *Server
}

// checkOwned refuses a legacy source that is not index's own to a token
// without the admin scope.
func (h migrationHandlers) checkOwned(r *http.Request, index string, cfg migrate.LegacyConfig) error {
	if cfg.OwnedBy(index) || h.s.Permits(r, Resource{Kind: KindAdmin}) {
		return nil
	}
	kind := map[string]string{migrate.KindTable: "embedded", migrate.KindDynamoDB: "DynamoDB", migrate.KindCQL: "CQL"}[cfg.Kind]
	what := fmt.Sprintf("the %s legacy table %q", kind, cfg.Table)
	if cfg.Endpoint != "" || cfg.Region != "" {
		what += " at an endpoint or region"
	}
	return Errorf(http.StatusForbidden, CodePermissionDenied,
		"%s is not index %q's own legacy table (%s): another legacy source needs a token with the admin scope", what, index, migrate.OwnTable(index))
}

// legacyJSON is a legacy table on the wire: LegacyConfig with its TTL as
// a duration string.
type legacyJSON struct {
	Kind     string           `json:"kind"`
	Table    string           `json:"table"`
	TTL      string           `json:"ttl,omitempty"`
	Endpoint string           `json:"endpoint,omitempty"`
	Region   string           `json:"region,omitempty"`
	Mapping  *migrate.Mapping `json:"mapping,omitempty"`
}

type migrationRequest struct {
	Legacy        *legacyJSON `json:"legacy"`
	WriteLegacy   bool        `json:"write_legacy"`
	SamplePercent float64     `json:"sample_percent"`
}

type migrationJSON struct {
	Index            string           `json:"index"`
	Phase            string           `json:"phase"`
	Legacy           legacyJSON       `json:"legacy"`
	WriteLegacy      bool             `json:"write_legacy"`
	SamplePercent    float64          `json:"sample_percent"`
	StartedAt        string           `json:"started_at"`
	PhaseSince       string           `json:"phase_since"`
	CutoverAt        string           `json:"cutover_at,omitempty"`
	History          []changeJSON     `json:"history"`
	Counters         migrate.Counters `json:"counters"`
	Backfill         *backfillJSON    `json:"backfill,omitempty"`
	BackfillRunning  bool             `json:"backfill_running"`
	CutoverReady     bool             `json:"cutover_ready"`
	CutoverBlockedBy string           `json:"cutover_blocked_by,omitempty"`
	LegacyLiveRows   *int64           `json:"legacy_live_rows,omitempty"`
	LegacyNewest     string           `json:"legacy_newest_expiry,omitempty"`
	LegacyDeletable  bool             `json:"legacy_deletable"`
}

type changeJSON struct {
	From   string `json:"from"`
	To     string `json:"to"`
	At     string `json:"at"`
	Forced bool   `json:"forced,omitempty"`
}

type backfillJSON struct {
	Pass             int     `json:"pass"`
	DryRun           bool    `json:"dry_run"`
	Done             bool    `json:"done"`
	StartedAt        string  `json:"started_at"`
	UpdatedAt        string  `json:"updated_at"`
	FinishedAt       string  `json:"finished_at,omitempty"`
	Scanned          int64   `json:"scanned"`
	Copied           int64   `json:"copied"`
	SkippedExpired   int64   `json:"skipped_expired"`
	SkippedRetention int64   `json:"skipped_retention"`
	SkippedNoShard   int64   `json:"skipped_no_shard"`
	Units            float64 `json:"units"`
	TotalEstimate    int64   `json:"total_estimate"`
	RowsPerSecond    float64 `json:"rows_per_second"`
	ETA              string  `json:"eta"`
	Error            string  `json:"error,omitempty"`
	LastCopyStarted  string  `json:"last_copy_started_at,omitempty"`
}

func legacyView(c migrate.LegacyConfig) legacyJSON {
	out := legacyJSON{Kind: c.Kind, Table: c.Table, Endpoint: c.Endpoint, Region: c.Region, Mapping: c.Mapping}
	if c.TTL != 0 {
		out.TTL = durfmt.Format(c.TTL)
	}
	return out
}

func migrationView(st migrate.Status) migrationJSON {
	out := migrationJSON{
		Index: st.Index, Phase: string(st.Phase), Legacy: legacyView(st.Legacy), WriteLegacy: st.WriteLegacy,
		SamplePercent: st.SamplePercent, StartedAt: timefmt.Format(st.StartedAt), PhaseSince: timefmt.Format(st.PhaseSince),
		CutoverAt: timefmt.FormatOptional(st.CutoverAt), History: []changeJSON{}, Counters: st.Counters,
		BackfillRunning: st.BackfillRunning, CutoverReady: st.CutoverReady, CutoverBlockedBy: st.CutoverBlockedBy,
		LegacyLiveRows: st.LegacyLiveRows, LegacyNewest: timefmt.FormatOptional(st.LegacyNewestExpiry), LegacyDeletable: st.LegacyDeletable,
	}
	for _, c := range st.History {
		out.History = append(out.History, changeJSON{From: string(c.From), To: string(c.To), At: timefmt.Format(c.At), Forced: c.Forced})
	}
	if cp := st.Backfill; cp != nil {
		b := &backfillJSON{
			Pass: cp.Pass, DryRun: cp.DryRun, Done: cp.Done, StartedAt: timefmt.Format(cp.StartedAt), UpdatedAt: timefmt.Format(cp.UpdatedAt),
			FinishedAt: timefmt.FormatOptional(cp.FinishedAt), Scanned: cp.Scanned, Copied: cp.Copied, SkippedExpired: cp.SkippedExpired,
			SkippedRetention: cp.SkippedRetention, SkippedNoShard: cp.SkippedNoShard, Units: cp.Units,
			TotalEstimate: cp.TotalEstimate, RowsPerSecond: cp.RowsPerSecond, ETA: durfmt.Format(cp.ETA), Error: cp.Error,
		}
		if cp.LastCopy != nil {
			b.LastCopyStarted = timefmt.Format(cp.LastCopy.StartedAt)
		}
		out.Backfill = b
	}
	return out
}

func (h migrationHandlers) status(w http.ResponseWriter, r *http.Request) error {
	st, err := h.svc.Status(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, migrationView(st))
}

func (h migrationHandlers) start(w http.ResponseWriter, r *http.Request) error {
	var req migrationRequest
	if err := DecodeJSON(r, &req); err != nil {
		return err
	}
	if req.Legacy == nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "legacy is required: {\"kind\":\"table\",\"table\":\"...\"} or a dynamodb or cql table with its mapping")
	}
	l := req.Legacy
	cfg := migrate.LegacyConfig{Kind: l.Kind, Table: l.Table, Endpoint: l.Endpoint, Region: l.Region, Mapping: l.Mapping}
	if l.TTL != "" {
		d, err := ParseDuration(l.TTL)
		if err != nil {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "legacy.ttl: %v", err)
		}
		cfg.TTL = d
	}
	name := r.PathValue("name")
	// Before anything reads the store or opens the source: the answer
	// depends on the token and the request alone. A malformed source is
	// a 400 whoever names it.
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := h.checkOwned(r, name, cfg); err != nil {
		return err
	}
	_, created, err := h.svc.Start(r.Context(), name, migrate.Settings{Legacy: cfg, WriteLegacy: req.WriteLegacy, SamplePercent: req.SamplePercent})
	if err != nil {
		return err
	}
	st, err := h.svc.Status(r.Context(), name)
	if err != nil {
		return err
	}
	return writeCreated(w, created, migrationView(st))
}

func (h migrationHandlers) phase(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Phase string `json:"phase"`
		Force bool   `json:"force"`
	}
	if err := DecodeJSON(r, &req); err != nil {
		return err
	}
	p, err := migrate.ParsePhase(req.Phase)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if _, err := h.svc.SetPhase(r.Context(), name, p, req.Force); err != nil {
		return err
	}
	st, err := h.svc.Status(r.Context(), name)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, migrationView(st))
}

func (h migrationHandlers) end(w http.ResponseWriter, r *http.Request) error {
	force := false
	switch v := r.URL.Query().Get("force"); v {
	case "", "false":
	case "true":
		force = true
	default:
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "force %q: want true or false", v)
	}
	if err := h.svc.End(r.Context(), r.PathValue("name"), force); err != nil {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}

func (h migrationHandlers) backfill(w http.ResponseWriter, r *http.Request) error {
	var opts migrate.BackfillOptions
	if err := DecodeJSON(r, &opts); err != nil {
		return err
	}
	name := r.PathValue("name")
	// The migration must exist before a run is started in the background.
	if _, err := h.svc.State(r.Context(), name); err != nil {
		return err
	}
	if err := h.svc.StartBackfill(name, opts); err != nil {
		return err
	}
	st, err := h.svc.Status(r.Context(), name)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusAccepted, migrationView(st))
}

func (h migrationHandlers) stopBackfill(w http.ResponseWriter, r *http.Request) error {
	h.svc.StopBackfill(r.PathValue("name"))
	return WriteJSON(w, http.StatusNoContent, nil)
}

// legacyRowJSON is one legacy row to write (an import).
type legacyRowJSON struct {
	IndexID   *string `json:"index_id"`
	EventID   *string `json:"event_id"`
	Timestamp *string `json:"timestamp"`
	Payload   *string `json:"payload"`
	ExpiresAt *string `json:"expires_at"`
}

// legacyRows writes rows to the index's legacy table, as asked: the import
// that fills an embedded legacy table from a JSONL file.
func (h migrationHandlers) legacyRows(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	st, err := h.svc.State(r.Context(), name)
	if err != nil {
		return err
	}
	if err := h.checkOwned(r, name, st.Legacy); err != nil {
		return err
	}
	var req struct {
		Rows []legacyRowJSON `json:"rows"`
	}
	if err := DecodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Rows) > timeseries.MaxBatch {
		return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "%d rows in one request, at most %d", len(req.Rows), timeseries.MaxBatch)
	}
	rows := make([]migrate.Row, len(req.Rows))
	for i, e := range req.Rows {
		bad := func(format string, args ...any) error {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "row %d: "+format, append([]any{i}, args...)...)
		}
		if e.IndexID == nil || e.EventID == nil || e.Timestamp == nil {
			return bad("index_id, event_id and timestamp are required")
		}
		ts, err := ParseTime(*e.Timestamp)
		if err != nil {
			return bad("timestamp: %v", err)
		}
		row := migrate.Row{Event: timeseries.Event{IndexID: *e.IndexID, EventID: *e.EventID, Timestamp: ts}}
		if e.Payload != nil {
			if row.Payload, err = base64.StdEncoding.DecodeString(*e.Payload); err != nil {
				return bad("payload is not standard base64: %v", err)
			}
		}
		if e.ExpiresAt != nil {
			if row.ExpiresAt, err = ParseTime(*e.ExpiresAt); err != nil {
				return bad("expires_at: %v", err)
			}
		}
		if err := timeseries.CheckEvent(row.Event); err != nil {
			return bad("%v", err)
		}
		rows[i] = row
	}
	n, err := h.svc.WriteLegacy(r.Context(), name, rows)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, map[string]int{"written": n})
}

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/multitable"
)

// Tables is the Feature of shared tables (API.md "Multitable"): logical
// tables multiplexed into one physical table by reg. Every route acts on
// the logical table named in its path (scope table:NAME), except listing
// every table, which is a collection route.
func Tables(reg *multitable.Registry) Feature {
	return func(s *Server) {
		h := tablesHandler{reg: reg, srv: s}
		res := ResourceFromPath(KindTable, "table")
		all := func(*http.Request) Resource { return Resource{Kind: KindTable} }
		s.Route("GET /v1/tables", all, h.listTables)
		s.Route("PUT /v1/tables/{table}", res, h.putTable)
		s.Route("GET /v1/tables/{table}", res, h.getTable)
		s.Route("DELETE /v1/tables/{table}", res, h.deleteTable)
		s.Route("GET /v1/tables/{table}/items", res, h.listItems, "after", "limit", "page_token")
		s.Route("PUT /v1/tables/{table}/items/{key}", res, h.putItem)
		s.Route("GET /v1/tables/{table}/items/{key}", res, h.getItem)
		s.Route("DELETE /v1/tables/{table}/items/{key}", res, h.deleteItem)
		s.Route("PATCH /v1/tables/{table}/items/{key}", res, h.patchItem)
		s.Route("POST /v1/tables/{table}/batch-get", res, h.batchGet)
		s.MapError(multitable.ErrPrecondition, http.StatusPreconditionFailed, CodeFailedPrecondition)
	}
}

type tablesHandler struct {
	reg *multitable.Registry
	srv *Server // for the response budget of item pages
}

// sharedTableJSON is one logical table in the API.
type sharedTableJSON struct {
	Name       string `json:"name"`
	DefaultTTL string `json:"default_ttl"`
	CreatedAt  string `json:"created_at"`
	// Expiry is the table's expiry mode: sweep, native or drop.
	Expiry string `json:"expiry"`
	// Rewrite is the table's last default-TTL rewrite, in answers about
	// one table only; absent when none was asked for.
	Rewrite *rewriteJSON `json:"rewrite,omitempty"`
}

func sharedTable(t multitable.Table) sharedTableJSON {
	return sharedTableJSON{Name: t.Name, DefaultTTL: durfmt.Format(t.DefaultTTL), CreatedAt: timefmt.Format(t.CreatedAt),
		Expiry: t.Expiry.String()}
}

// sharedItemJSON is one item in the API; ExpiresAt is null when the item never
// expires.
type sharedItemJSON struct {
	Key        string          `json:"key"`
	Timestamp  string          `json:"timestamp"`
	Attributes json.RawMessage `json:"attributes"`
	ExpiresAt  *string         `json:"expires_at"`
	// Version is the item's version, also its ETag (quoted).
	Version string `json:"version"`
}

func sharedItem(it multitable.Item) sharedItemJSON {
	out := sharedItemJSON{Key: it.Key, Timestamp: timefmt.Format(it.Timestamp), Attributes: it.Attributes, Version: it.Version}
	if !it.ExpiresAt.IsZero() {
		s := timefmt.Format(it.ExpiresAt)
		out.ExpiresAt = &s
	}
	return out
}

func (h tablesHandler) listTables(w http.ResponseWriter, r *http.Request) error {
	tables, err := h.reg.Tables(r.Context())
	if err != nil {
		return err
	}
	out := make([]sharedTableJSON, 0, len(tables))
	for _, t := range tables {
		out = append(out, sharedTable(t))
	}
	return WriteJSON(w, http.StatusOK, map[string]any{"tables": out})
}

func (h tablesHandler) putTable(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		DefaultTTL *string `json:"default_ttl"`
		Expiry     string  `json:"expiry"`
		// Rewrite gives the items already put without a ttl of their
		// own the default TTL too.
		Rewrite bool `json:"rewrite"`
	}
	// Every field is optional, so an empty body is the default table.
	if r.ContentLength != 0 {
		if err := DecodeJSON(r, &body); err != nil {
			return err
		}
	}
	// Without default_ttl an existing table keeps its own, as it keeps
	// its mode without expiry; a new one gets none.
	cfg := multitable.Config{KeepDefaultTTL: body.DefaultTTL == nil}
	if body.DefaultTTL != nil {
		d, err := ParseDuration(*body.DefaultTTL)
		if err != nil {
			return err
		}
		cfg.DefaultTTL = d
	}
	mode, err := parseExpiryMode(body.Expiry)
	if err != nil {
		return err
	}
	cfg.Expiry, cfg.Rewrite = mode, body.Rewrite
	t, created, err := h.reg.CreateTable(r.Context(), r.PathValue("table"), cfg)
	if err != nil {
		return err
	}
	return writeCreated(w, created, h.withRewrite(r, sharedTable(t)))
}

// withRewrite adds the table's default-TTL rewrite to its view. A failed
// read of it leaves it out: the table itself was read or written.
func (h tablesHandler) withRewrite(r *http.Request, v sharedTableJSON) sharedTableJSON {
	if j, ok, err := h.reg.Rewrite(r.Context(), v.Name); err == nil {
		v.Rewrite = rewriteView(j, ok)
	}
	return v
}

func (h tablesHandler) getTable(w http.ResponseWriter, r *http.Request) error {
	t, err := h.reg.Table(r.Context(), r.PathValue("table"))
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, h.withRewrite(r, sharedTable(t)))
}

func (h tablesHandler) deleteTable(w http.ResponseWriter, r *http.Request) error {
	if err := h.reg.DeleteTable(r.Context(), r.PathValue("table")); err != nil {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}

func (h tablesHandler) putItem(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Timestamp  *string         `json:"timestamp"`
		Attributes json.RawMessage `json:"attributes"`
		TTL        *string         `json:"ttl"`
	}
	ifAbsent, version, err := itemPreconditions(r, true)
	if err != nil {
		return err
	}
	if err := DecodeJSON(r, &body); err != nil {
		return err
	}
	if body.Timestamp == nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "timestamp is required")
	}
	ts, err := ParseTime(*body.Timestamp)
	if err != nil {
		return err
	}
	in := multitable.PutItem{Key: r.PathValue("key"), Timestamp: ts, Attributes: body.Attributes, IfAbsent: ifAbsent, IfVersion: version}
	if body.TTL != nil {
		d, err := ParseDuration(*body.TTL)
		if err != nil {
			return err
		}
		in.TTL = &d
	}
	it, err := h.reg.Put(r.Context(), r.PathValue("table"), in)
	if err != nil {
		return err
	}
	return writeItem(w, it)
}

func (h tablesHandler) getItem(w http.ResponseWriter, r *http.Request) error {
	it, err := h.reg.Get(r.Context(), r.PathValue("table"), r.PathValue("key"))
	if err != nil {
		return err
	}
	return writeItem(w, it)
}

func (h tablesHandler) deleteItem(w http.ResponseWriter, r *http.Request) error {
	_, version, err := itemPreconditions(r, false)
	if err != nil {
		return err
	}
	if err := h.reg.DeleteIf(r.Context(), r.PathValue("table"), r.PathValue("key"), version); err != nil {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}

func (h tablesHandler) listItems(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := ParseLimit(r)
	if err != nil {
		return err
	}
	lq := multitable.ListQuery{Limit: limit, PageToken: q.Get("page_token")}
	if q.Has("after") {
		after, err := ParseQueryTime("after", q.Get("after"))
		if err != nil {
			return err
		}
		lq.After = &after
	}
	// The page's share of the response budget bounds its data, before
	// anything is read.
	resp, err := h.srv.startPage(r)
	if err != nil {
		return err
	}
	defer resp.done()
	lq.MaxBytes = resp.maxData
	page, err := h.reg.List(r.Context(), r.PathValue("table"), lq)
	if err != nil {
		return err
	}
	out := struct {
		Items         []sharedItemJSON `json:"items"`
		NextPageToken string           `json:"next_page_token,omitempty"`
	}{Items: make([]sharedItemJSON, 0, len(page.Items)), NextPageToken: page.NextPageToken}
	for _, it := range page.Items {
		out.Items = append(out.Items, sharedItem(it))
	}
	body := bytes.NewBuffer(resp.buffer())
	enc := json.NewEncoder(body)
	enc.SetEscapeHTML(false) // as WriteJSON
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("server: encode response: %w", err)
	}
	return resp.write(w, http.StatusOK, contentTypeJSON, body.Bytes())
}

// sharedTableUsageJSON is one logical table in GET /v1/admin/tables.
type sharedTableUsageJSON struct {
	Name       string `json:"name"`
	DefaultTTL string `json:"default_ttl"`
	// Items counts live items; Bytes sums their keys, attribute documents
	// and timestamps.
	Items int64 `json:"items"`
	Bytes int64 `json:"bytes"`
	// Expiry is the table's expiry mode.
	Expiry string `json:"expiry"`
}

// logicalTableUsage reports every shared table in the store, for the admin
// view. It reads the store directly, so it works whether or not the Tables
// feature is installed.
func (s *Server) logicalTableUsage(ctx context.Context) ([]sharedTableUsageJSON, error) {
	usage, err := s.admin.SharedTableUsage(ctx)
	if err != nil {
		return nil, fmt.Errorf("shared table usage: %w", err)
	}
	out := make([]sharedTableUsageJSON, 0, len(usage))
	for _, u := range usage {
		out = append(out, sharedTableUsageJSON{Name: u.Name, DefaultTTL: durfmt.Format(u.DefaultTTL), Items: u.Items, Bytes: u.Bytes,
			Expiry: u.Expiry.String()})
	}
	return out, nil
}

package server

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/lists"
)

// Lists serves the feature-store list API (API.md "Lists") on svc.
//
// Path segments arrive unescaped from the router (r.PathValue), so an
// escaped '/' (%2F), '#' (%23) or NUL (%00) stays inside its segment. The
// version "_" stands for the default (empty) version.
func Lists(svc *lists.Service) Feature {
	return func(s *Server) {
		h := listHandlers{svc: svc, srv: s}
		res := ResourceFromPath(KindList, "entity_type")
		const feature = "/v1/list-features/{entity_type}/{feature}/{version}"
		const items = "/v1/lists/{entity_type}/{feature}/{version}/{entity_id}/items"
		s.Route("GET /v1/list-features", func(*http.Request) Resource { return Resource{Kind: KindList} }, h.listFeatures)
		s.Route("GET /v1/list-features/{entity_type}", res, h.listFeatures)
		s.Route("PUT "+feature, res, h.putFeature)
		s.Route("GET "+feature, res, h.getFeature)
		s.Route("DELETE "+feature, res, h.deleteFeature)
		s.Route("DELETE /v1/list-features/{entity_type}/{feature}", res, h.deleteWholeFeature)
		s.Route("POST "+items, res, h.addItems)
		s.Route("GET "+items, res, h.getItems, "min_timestamp", "limit", "page_token")
		s.Route("DELETE "+items, res, h.removeItems, "value")
		s.Route("GET "+items+"/count", res, h.countItems)
	}
}

type listHandlers struct {
	svc *lists.Service
	srv *Server // for the response budget of item pages
}

// DefaultListVersion is the path segment naming a feature's default
// (empty) version.
const DefaultListVersion = "_"

// listFeatureID reads the feature from the path.
func listFeatureID(r *http.Request) lists.FeatureID {
	id := lists.FeatureID{
		EntityType: r.PathValue("entity_type"),
		Feature:    r.PathValue("feature"),
		Version:    r.PathValue("version"),
	}
	if id.Version == DefaultListVersion {
		id.Version = ""
	}
	return id
}

// listFeatureJSON is a list feature version on the wire.
type listFeatureJSON struct {
	EntityType string `json:"entity_type"`
	Feature    string `json:"feature"`
	Version    string `json:"version"`
	TTL        string `json:"ttl"`
	CreatedAt  string `json:"created_at"`
	// Table is the physical table holding the version's items, as GET
	// /v1/admin/tables names it.
	Table string `json:"table"`
	// Expiry is the version's expiry mode: sweep, native or drop.
	Expiry string `json:"expiry"`
	// MaxItems is the cap on a list's live items; absent for none, so
	// that a feature without a cap reads as it did before caps existed.
	MaxItems int `json:"max_items,omitempty"`
	// Rewrite is the version's last TTL rewrite, in answers about one
	// version only; absent when none was asked for.
	Rewrite *rewriteJSON `json:"rewrite,omitempty"`
}

func listFeatureView(f lists.Feature) listFeatureJSON {
	return listFeatureJSON{
		EntityType: f.EntityType, Feature: f.Feature, Version: f.Version,
		TTL: durfmt.Format(f.TTL), CreatedAt: timefmt.Format(f.Created), Table: f.Table,
		Expiry: f.Expiry.String(), MaxItems: f.MaxItems,
	}
}

func (h listHandlers) putFeature(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		TTL    *string `json:"ttl"`
		Expiry string  `json:"expiry"`
		// MaxItems absent keeps an existing version's cap.
		MaxItems *int `json:"max_items"`
		// Rewrite gives the items already added the TTL too.
		Rewrite bool `json:"rewrite"`
	}
	if err := DecodeJSON(r, &req); err != nil {
		return err
	}
	mode, err := parseExpiryMode(req.Expiry)
	if err != nil {
		return err
	}
	if req.TTL == nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "ttl is required (a Go duration such as \"720h\")")
	}
	ttl, err := ParseDuration(*req.TTL)
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "ttl: %v", err)
	}
	id := listFeatureID(r)
	f, created, err := h.svc.CreateFeatureWith(r.Context(), id, lists.FeatureConfig{TTL: ttl, Expiry: mode, MaxItems: req.MaxItems, Rewrite: req.Rewrite})
	if err != nil {
		return err
	}
	return writeCreated(w, created, h.withRewrite(r, id, listFeatureView(f)))
}

// withRewrite adds the version's TTL rewrite to its view. A failed read
// of it leaves it out: the version itself was read or written.
func (h listHandlers) withRewrite(r *http.Request, id lists.FeatureID, v listFeatureJSON) listFeatureJSON {
	if j, ok, err := h.svc.Rewrite(r.Context(), id); err == nil {
		v.Rewrite = rewriteView(j, ok)
	}
	return v
}

// listFeatures answers every feature version, or those of the entity type
// in the path.
func (h listHandlers) listFeatures(w http.ResponseWriter, r *http.Request) error {
	fs, err := h.svc.Features(r.Context(), r.PathValue("entity_type"))
	if err != nil {
		return err
	}
	out := struct {
		Features []listFeatureJSON `json:"features"`
	}{Features: make([]listFeatureJSON, 0, len(fs))}
	for _, f := range fs {
		out.Features = append(out.Features, listFeatureView(f))
	}
	return WriteJSON(w, http.StatusOK, out)
}

func (h listHandlers) getFeature(w http.ResponseWriter, r *http.Request) error {
	id := listFeatureID(r)
	f, err := h.svc.Feature(r.Context(), id)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, h.withRewrite(r, id, listFeatureView(f)))
}

// deleteFeature deletes a feature version. Deleting a missing one
// succeeds, as every DELETE of the API does.
func (h listHandlers) deleteFeature(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.DeleteFeatureVersion(r.Context(), listFeatureID(r)); err != nil && !errors.Is(err, lists.ErrFeatureNotFound) {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}

// deleteWholeFeature deletes every version of a feature; a feature
// without any is already deleted, which succeeds.
func (h listHandlers) deleteWholeFeature(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.svc.DeleteFeature(r.Context(), r.PathValue("entity_type"), r.PathValue("feature")); err != nil {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}

// listItemJSON is one item on the wire; pointers tell a missing field from
// an empty one.
type listItemJSON struct {
	Value     *string `json:"value"`
	Timestamp *string `json:"timestamp"`
}

func (h listHandlers) addItems(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Items []listItemJSON `json:"items"`
	}
	if err := DecodeJSON(r, &req); err != nil {
		return err
	}
	if req.Items == nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "items is required")
	}
	if len(req.Items) > lists.MaxItemsPerAdd {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "%d items in one request, at most %d", len(req.Items), lists.MaxItemsPerAdd)
	}
	items := make([]lists.Item, len(req.Items))
	for i, it := range req.Items {
		bad := func(format string, args ...any) error {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "item %d: %s", i, fmt.Sprintf(format, args...))
		}
		if it.Value == nil || it.Timestamp == nil {
			return bad("value and timestamp are required")
		}
		ts, err := ParseTime(*it.Timestamp)
		if err != nil {
			return bad("timestamp: %v", err)
		}
		v, err := base64.StdEncoding.DecodeString(*it.Value)
		if err != nil {
			return bad("value is not standard base64: %v", err)
		}
		items[i] = lists.Item{Value: v, Timestamp: ts}
	}
	res, err := h.svc.Add(r.Context(), listFeatureID(r), r.PathValue("entity_id"), items)
	if err != nil {
		return err
	}
	out := map[string]int{"written": res.Written, "skipped_expired": res.SkippedExpired}
	if res.Trimmed > 0 {
		// Only when the cap removed items: an add that trimmed nothing
		// answers as it did before caps existed.
		out["trimmed"] = res.Trimmed
	}
	return WriteJSON(w, http.StatusOK, out)
}

func (h listHandlers) getItems(w http.ResponseWriter, r *http.Request) error {
	// The hot read: its query parameters are read off the raw query
	// string (queryGet) rather than parsed into url.Values.
	var minTS time.Time
	if s := queryGet(r, "min_timestamp"); s != "" {
		var err error
		if minTS, err = ParseQueryTime("min_timestamp", s); err != nil {
			return err
		}
	}
	limit, err := ParseLimit(r)
	if err != nil {
		return err
	}
	msgpack := wantsMsgpack(r)
	// A kept answer of the same read, if the list has not changed since
	// (listcache.go).
	var key []byte
	var stamp *lists.Stamp
	if c := h.srv.pages; c != nil {
		var kb [160]byte
		key = pageKey(kb[:0], r, msgpack)
		if p, ok := c.get(key); ok && h.svc.Fresh(r.Context(), listFeatureID(r), r.PathValue("entity_id"), &p.stamp) {
			c.kept.Inc()
			return p.write(w)
		}
		c.read.Inc()
		stamp = new(lists.Stamp)
	}
	// The page's share of the response budget bounds its data, before
	// anything is read.
	resp, err := h.srv.startPage(r)
	if err != nil {
		return err
	}
	defer resp.done()
	rd := lists.Read{MinTimestamp: minTS, Limit: limit, PageToken: queryGet(r, "page_token"), MaxBytes: resp.maxData, Stamp: stamp}
	w.Header()["Vary"] = varyAccept
	// Items are encoded straight from the store's buffers into a pooled
	// response buffer: {"items":[{"value":"<base64>","timestamp":"..."}]},
	// or in MessagePack when asked for.
	if msgpack {
		return h.getItemsMsgpack(w, r, rd, &resp, key)
	}
	b := append(resp.buffer(), `{"items":[`...)
	_, next, err := h.svc.Scan(r.Context(), listFeatureID(r), r.PathValue("entity_id"), rd, func(it lists.Item) error {
		if b[len(b)-1] != '[' {
			b = append(b, ',')
		}
		b = append(b, `{"value":`...)
		b = appendJSONBytes(b, it.Value)
		b = append(b, `,"timestamp":"`...)
		b = timefmt.Append(b, it.Timestamp)
		b = append(b, `"}`...)
		return nil
	})
	resp.keep(b)
	if err != nil {
		return err
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"next_page_token":"`...)
		b = append(b, next...) // base64url: nothing to escape
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	if rd.Stamp != nil {
		h.srv.pages.put(key, contentTypeJSON, b, rd.Stamp)
	}
	return resp.write(w, http.StatusOK, contentTypeJSON, b)
}

// varyAccept tells caches that list and event reads depend on Accept.
var varyAccept = []string{"Accept"}

// getItemsMsgpack answers a list read in MessagePack: a map with one key,
// "items", holding an array of [value (bin), timestamp (timestamp
// extension)] pairs, newest first.
func (h listHandlers) getItemsMsgpack(w http.ResponseWriter, r *http.Request, rd lists.Read, resp *pageResponse, key []byte) error {
	// The map's size is known only after the scan: its one-byte header
	// is set again when a token follows the items.
	b := appendMsgpackMap(resp.buffer(), 1)
	mapAt := len(b) - 1
	b = appendMsgpackString(b, "items")
	at := len(b)
	b = appendMsgpackArray32(b)
	n, next, err := h.svc.Scan(r.Context(), listFeatureID(r), r.PathValue("entity_id"), rd, func(it lists.Item) error {
		b = appendMsgpackArray(b, 2)
		b = appendMsgpackBin(b, it.Value)
		b = appendMsgpackTime(b, it.Timestamp)
		return nil
	})
	resp.keep(b)
	if err != nil {
		return err
	}
	setMsgpackArray32(b, at, n)
	if next != "" {
		b[mapAt] = appendMsgpackMap(nil, 2)[0]
		b = appendMsgpackString(b, "next_page_token")
		b = appendMsgpackString(b, next)
	}
	if rd.Stamp != nil {
		h.srv.pages.put(key, contentTypeMsgpackHeader, b, rd.Stamp)
	}
	return resp.write(w, http.StatusOK, contentTypeMsgpackHeader, b)
}

func (h listHandlers) removeItems(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	id, entity := listFeatureID(r), r.PathValue("entity_id")
	if !q.Has("value") {
		if err := h.svc.RemoveAll(r.Context(), id, entity); err != nil {
			return err
		}
		return WriteJSON(w, http.StatusNoContent, nil)
	}
	// A '+' left unescaped in a query string arrives as a space, which
	// base64 never holds: put it back rather than refuse the request.
	v, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(q.Get("value"), " ", "+"))
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "value is not standard base64: %v", err)
	}
	if _, err := h.svc.RemoveByValue(r.Context(), id, entity, v); err != nil {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}

// countItems answers the number of live items in a list.
func (h listHandlers) countItems(w http.ResponseWriter, r *http.Request) error {
	n, err := h.svc.Count(r.Context(), listFeatureID(r), r.PathValue("entity_id"))
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, map[string]int{"count": n})
}

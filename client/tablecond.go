package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
)

// MaxBatchGetKeys is the most keys one BatchGetTableItems reads.
const MaxBatchGetKeys = 100

// headersKey carries the request headers a call adds to its request
// (roundTrip sends them), so that the one request path serves every call.
type headersKey struct{}

// withHeaders returns ctx carrying h for the request made under it.
func withHeaders(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, headersKey{}, h)
}

// requestHeaders returns the headers ctx carries for its request.
func requestHeaders(ctx context.Context) http.Header {
	h, _ := ctx.Value(headersKey{}).(http.Header)
	return h
}

// withPreconditions returns ctx carrying a write's If-None-Match: * (create
// only) or If-Match (a version, or "*") header; ctx itself when there is
// neither.
func withPreconditions(ctx context.Context, ifAbsent bool, version string) context.Context {
	h := http.Header{}
	if ifAbsent {
		h.Set("If-None-Match", "*")
	}
	switch version {
	case "":
	case "*":
		h.Set("If-Match", "*")
	default:
		h.Set("If-Match", `"`+version+`"`)
	}
	if len(h) == 0 {
		return ctx
	}
	return withHeaders(ctx, h)
}

// PatchTableItem is the body of PATCH /v1/tables/{table}/items/{key}: a
// partial update of an existing item.
type PatchTableItem struct {
	// Attributes is a JSON merge patch (RFC 7396) of the item's attributes,
	// anything encoding/json encodes as a JSON object: a member set to null
	// removes that attribute, an object merges into an object recursively,
	// anything else replaces it. Nil changes none.
	Attributes any
	// Timestamp, when not nil, replaces the item's timestamp.
	Timestamp *time.Time
	// TTL, when not nil, gives the item a new expiry TTL after the write
	// (0: never); nil keeps its expiry.
	TTL *time.Duration
	// IfVersion, when set, makes the patch compare and set (If-Match).
	IfVersion string
}

// MarshalJSON writes a PatchTableItem as the API does, durations as Go
// duration strings.
func (p PatchTableItem) MarshalJSON() ([]byte, error) {
	w := struct {
		Timestamp  *string   `json:"timestamp,omitempty"`
		Attributes any       `json:"attributes,omitempty"`
		TTL        *duration `json:"ttl,omitempty"`
	}{Attributes: p.Attributes}
	if p.Timestamp != nil {
		s := timefmt.Format(*p.Timestamp)
		w.Timestamp = &s
	}
	if p.TTL != nil {
		d := duration(*p.TTL)
		w.TTL = &d
	}
	return json.Marshal(w)
}

// PatchTableItem merges a partial update into an existing item
// (PATCH /v1/tables/{table}/items/{key}) and returns it as stored. A
// missing or expired item is ErrNotFound; a version that does not match
// is ErrFailedPrecondition; either writes nothing.
func (c *Client) PatchTableItem(ctx context.Context, table, key string, patch PatchTableItem) (TableItem, error) {
	p, err := tableItemPath(table, key)
	if err != nil {
		return TableItem{}, err
	}
	var it TableItem
	_, err = c.do(withPreconditions(ctx, false, patch.IfVersion), http.MethodPatch, p, nil, patch, &it)
	return it, err
}

// DeleteTableItemIf deletes an item if it holds version ("*": any live
// item), else fails with ErrFailedPrecondition and deletes nothing
// (DELETE /v1/tables/{table}/items/{key} with If-Match).
func (c *Client) DeleteTableItemIf(ctx context.Context, table, key, version string) error {
	if version == "" {
		return fmt.Errorf("%w: DeleteTableItemIf needs a version (DeleteTableItem deletes unconditionally)", ErrInvalidArgument)
	}
	p, err := tableItemPath(table, key)
	if err != nil {
		return err
	}
	_, err = c.do(withPreconditions(ctx, false, version), http.MethodDelete, p, nil, nil, nil)
	return err
}

// TableItemsBatch is what BatchGetTableItems answers.
type TableItemsBatch struct {
	// Items are the live items, in the order of the keys asked for (a
	// key asked twice is answered once).
	Items []TableItem `json:"items"`
	// Missing are the keys that hold no live item.
	Missing []string `json:"missing"`
}

// BatchGetTableItems reads up to MaxBatchGetKeys items of one table in one
// request (POST /v1/tables/{table}/batch-get).
func (c *Client) BatchGetTableItems(ctx context.Context, table string, keys []string) (TableItemsBatch, error) {
	if len(keys) > MaxBatchGetKeys {
		return TableItemsBatch{}, fmt.Errorf("%w: %d keys, at most %d", ErrInvalidArgument, len(keys), MaxBatchGetKeys)
	}
	p, err := tablePath(table, "/batch-get")
	if err != nil {
		return TableItemsBatch{}, err
	}
	if keys == nil {
		keys = []string{}
	}
	var out TableItemsBatch
	_, err = c.do(ctx, http.MethodPost, p, nil, map[string][]string{"keys": keys}, &out)
	return out, err
}

package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ebb-data/ebb/multitable"
)

// Conditional and partial writes and batch reads of shared-table items
// (API.md "Multitable"): an item's version is its ETag, If-None-Match: *
// makes a put create only, If-Match makes a put, patch or delete compare
// and set, and a failed precondition is 412 failed_precondition with
// nothing written.

// writeItem answers an item with its version as ETag.
func writeItem(w http.ResponseWriter, it multitable.Item) error {
	w.Header().Set("ETag", `"`+it.Version+`"`)
	return WriteJSON(w, http.StatusOK, sharedItem(it))
}

// itemPreconditions reads a write's If-None-Match (only "*", and only
// where createOnly allows it) and If-Match ("*" or one entity tag, quoted
// or not) headers.
func itemPreconditions(r *http.Request, createOnly bool) (ifAbsent bool, version string, err error) {
	if v, ok := r.Header["If-None-Match"]; ok {
		if !createOnly || len(v) != 1 || strings.TrimSpace(v[0]) != "*" {
			return false, "", Errorf(http.StatusBadRequest, CodeInvalidArgument,
				"If-None-Match: only * (create only) is supported, on PUT")
		}
		ifAbsent = true
	}
	if v, ok := r.Header["If-Match"]; ok {
		tag := strings.TrimSpace(strings.Join(v, ","))
		if tag != "*" {
			if strings.HasPrefix(tag, "W/") || strings.Contains(tag, ",") {
				return false, "", Errorf(http.StatusBadRequest, CodeInvalidArgument,
					"If-Match: want * or one strong entity tag, the item's version")
			}
			tag = strings.TrimSuffix(strings.TrimPrefix(tag, `"`), `"`)
		}
		if tag == "" {
			return false, "", Errorf(http.StatusBadRequest, CodeInvalidArgument, "If-Match is empty")
		}
		if ifAbsent {
			return false, "", Errorf(http.StatusBadRequest, CodeInvalidArgument,
				"If-Match and If-None-Match: a write is either create only or conditional on a version")
		}
		version = tag
	}
	return ifAbsent, version, nil
}

func (h tablesHandler) patchItem(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Timestamp  *string         `json:"timestamp"`
		Attributes json.RawMessage `json:"attributes"`
		TTL        *string         `json:"ttl"`
	}
	_, version, err := itemPreconditions(r, false)
	if err != nil {
		return err
	}
	if err := DecodeJSON(r, &body); err != nil {
		return err
	}
	in := multitable.PatchItem{Key: r.PathValue("key"), Attributes: body.Attributes, IfVersion: version}
	if body.Timestamp != nil {
		ts, err := ParseTime(*body.Timestamp)
		if err != nil {
			return err
		}
		in.Timestamp = &ts
	}
	if body.TTL != nil {
		d, err := ParseDuration(*body.TTL)
		if err != nil {
			return err
		}
		in.TTL = &d
	}
	it, err := h.reg.Patch(r.Context(), r.PathValue("table"), in)
	if err != nil {
		return err
	}
	return writeItem(w, it)
}

func (h tablesHandler) batchGet(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Keys *[]string `json:"keys"`
	}
	if err := DecodeJSON(r, &body); err != nil {
		return err
	}
	if body.Keys == nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "keys is required")
	}
	if n := len(*body.Keys); n > multitable.MaxBatchGet {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "%d keys, at most %d", n, multitable.MaxBatchGet)
	}
	// Up to MaxBatchGet items of up to 256 KiB each: the answer takes its
	// share of the response budget as a listing page does.
	resp, err := h.srv.startPage(r)
	if err != nil {
		return err
	}
	defer resp.done()
	items, missing, err := h.reg.GetMany(r.Context(), r.PathValue("table"), *body.Keys)
	if err != nil {
		return err
	}
	out := struct {
		Items   []sharedItemJSON `json:"items"`
		Missing []string         `json:"missing"`
	}{Items: make([]sharedItemJSON, 0, len(items)), Missing: missing}
	for _, it := range items {
		out.Items = append(out.Items, sharedItem(it))
	}
	buf := bytes.NewBuffer(resp.buffer())
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // as WriteJSON
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("server: encode response: %w", err)
	}
	return resp.write(w, http.StatusOK, contentTypeJSON, buf.Bytes())
}

package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ebb-data/ebb/multitable"
)

// TestInvalidUTF8IsRefused: a JSON body whose strings (values or names,
// at any depth, attributes included) are not valid UTF-8, raw or as an
// unpaired surrogate escape, is refused with 400 invalid_argument and
// writes nothing, so that every answer stays valid JSON.
func TestInvalidUTF8IsRefused(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create", e.do(t, "PUT", "/v1/tables/t", "", `{}`), 201, "")
	rows := func() int64 {
		s, err := e.st.Stats(context.Background(), multitable.ItemsTable)
		if err != nil {
			t.Fatal(err)
		}
		return s.Rows
	}
	before := rows()
	for name, body := range map[string]string{
		"attribute value":    `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"a":"x` + "\xff" + `y"}}`,
		"attribute name":     `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"` + "\xc3" + `":1}}`,
		"nested attribute":   `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"a":[{"b":"` + "\xed\xa0\x80" + `"}]}}`,
		"unpaired surrogate": `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"a":"\ud800"}}`,
		"ttl":                `{"timestamp":"2026-03-01T12:00:00Z","ttl":"1h` + "\xff" + `"}`,
	} {
		r := e.do(t, "PUT", tablesItemPath("t", "k"), "", body)
		tablesExpect(t, name, r, http.StatusBadRequest, "invalid_argument")
		if !json.Valid(r.body) || !strings.Contains(string(r.body), "UTF-8") {
			t.Errorf("%s: %s, want valid JSON naming UTF-8", name, r.body)
		}
	}
	if after := rows(); after != before {
		t.Fatalf("refused requests wrote: %d rows before, %d after", before, after)
	}
	if r := e.do(t, "GET", tablesItemPath("t", "k"), "", nil); r.status != http.StatusNotFound {
		t.Fatalf("item after refused puts: %d %s", r.status, r.body)
	}
	// Valid UTF-8 of any script, and escapes of it, are kept as sent.
	tablesExpect(t, "valid", e.do(t, "PUT", tablesItemPath("t", "k"), "", `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"é":"日本 \ud83d\ude00"}}`), 200, "")
}

// TestBodyOfWrongTypeMessage: a body that is not a JSON object, or a
// field of the wrong JSON type, is refused in the API's terms, without
// naming Go types.
func TestBodyOfWrongTypeMessage(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create", e.do(t, "PUT", "/v1/tables/t", "", `{}`), 201, "")
	for body, want := range map[string]string{
		`[{"timestamp":"2026-03-01T12:00:00Z"}]`: "the body must be a JSON object, not an array",
		`"x"`:                                    "the body must be a JSON object, not a string",
		`{"timestamp":1}`:                        "timestamp must be a string, not a number",
		`{"timestamp":"2026-03-01T12:00:00Z","ttl":["1h"]}`: "ttl must be a string, not an array",
	} {
		r := e.do(t, "PUT", tablesItemPath("t", "k"), "", body)
		tablesExpect(t, body, r, http.StatusBadRequest, "invalid_argument")
		var b struct {
			Error struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.Error.Message, want) || strings.Contains(b.Error.Message, "server.") || strings.Contains(b.Error.Message, "*") {
			t.Errorf("body %s: message %q, want one saying %q and naming no Go type", body, b.Error.Message, want)
		}
	}
}

// TestAcceptQValues: a list read honours the q-values and order of
// Accept, on either listener: q=0 refuses MessagePack, and at equal q the
// type listed first wins.
func TestAcceptQValues(t *testing.T) {
	e := startLists(t, nil)
	listsExpect(t, "put feature", e.do(t, "PUT", listFeaturePath("user", "f", "_"), "", `{"ttl":"720h"}`), http.StatusCreated, "")
	path := listItemsPath("user", "f", "_", "u-1")
	listsExpect(t, "add", e.do(t, "POST", path, "", `{"items":[{"value":"AAE=","timestamp":"2026-11-22T09:59:00Z"}]}`), http.StatusOK, "")
	for accept, want := range map[string]string{
		"application/msgpack;q=0":                     "application/json",
		"application/json, application/msgpack":       "application/json",
		"application/msgpack, application/json":       "application/msgpack",
		"application/json;q=0.5, application/msgpack": "application/msgpack",
	} {
		r := call(t, "GET", e.url+path, "", nil, "Accept: "+accept)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != want {
			t.Errorf("Accept %q: %d %s, want %s", accept, r.status, r.header.Get("Content-Type"), want)
		}
		if want == "application/json" && !json.Valid(r.body) {
			t.Errorf("Accept %q: body %q is not JSON", accept, r.body)
		}
	}
}

package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
)

func TestDecodeJSON(t *testing.T) {
	type body struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	big := `{"name":"` + strings.Repeat("x", server.MaxBodyBytes) + `"}`
	cases := []struct {
		in     string
		status int // 0: success
	}{
		{`{"name":"a","count":2}`, 0},
		{"  {\"name\":\"a\"}\n  ", 0},
		{``, 400},
		{`{`, 400},
		{`{"name":}`, 400},
		{`{"name":"a","extra":1}`, 400},
		{`{"count":"two"}`, 400},
		{`{"name":"a"} {"name":"b"}`, 400},
		{`{"name":"a"}x`, 400},
		{`[1,2]`, 400},
		{big, 413},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.in))
		var v body
		err := server.DecodeJSON(r, &v)
		if c.status == 0 {
			if err != nil {
				t.Errorf("%.40q: %v", c.in, err)
			}
			continue
		}
		var se *server.Error
		if !errors.As(err, &se) || se.Status != c.status {
			t.Errorf("%.40q: got %v, want status %d", c.in, err, c.status)
		}
	}
	// Success fills the value.
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"name":"a","count":2}`))
	var v body
	if err := server.DecodeJSON(r, &v); err != nil || v != (body{"a", 2}) {
		t.Fatalf("decoded %+v, %v", v, err)
	}
}

// TestDecodeJSONOverHTTP checks the 8 MiB limit end to end: the client
// gets 413 too_large and the handler's store sees nothing.
func TestDecodeJSONOverHTTP(t *testing.T) {
	feature := func(s *server.Server) {
		s.Route("POST /v1/echo", server.AdminResource, func(w http.ResponseWriter, r *http.Request) error {
			var v map[string]string
			if err := server.DecodeJSON(r, &v); err != nil {
				return err
			}
			return server.WriteJSON(w, http.StatusOK, v)
		})
	}
	ts, _ := start(t, server.Options{Features: []server.Feature{feature}})
	big := `{"k":"` + strings.Repeat("x", server.MaxBodyBytes) + `"}`
	r := call(t, "POST", ts.URL+"/v1/echo", "", strings.NewReader(big))
	if r.status != 413 || r.errorCode(t) != server.CodeTooLarge {
		t.Fatalf("oversize body: %d %s", r.status, r.body)
	}
	r = call(t, "POST", ts.URL+"/v1/echo", "", strings.NewReader(`{"k":"v","x":`))
	if r.status != 400 || r.errorCode(t) != server.CodeInvalidArgument {
		t.Fatalf("malformed body: %d %s", r.status, r.body)
	}
	r = call(t, "POST", ts.URL+"/v1/echo", "", strings.NewReader(`{"k":"v"}`))
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"k":"v"`)) {
		t.Fatalf("echo: %d %s", r.status, r.body)
	}
}

func TestParseLimit(t *testing.T) {
	cases := []struct {
		query string
		want  int
		ok    bool
	}{
		{"", 100, true},
		{"limit=1", 1, true},
		{"limit=10000", 10000, true},
		{"limit=0", 0, false},
		{"limit=10001", 0, false},
		{"limit=-5", 0, false},
		{"limit=ten", 0, false},
		{"limit=1.5", 0, false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/?"+c.query, nil)
		got, err := server.ParseLimit(r)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("%q: got %d, %v", c.query, got, err)
		}
		if err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%q: error %v is not invalid_argument", c.query, err)
		}
	}
}

func TestParseTime(t *testing.T) {
	cases := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-11-22T10:00:00Z", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), true},
		{"2026-11-22T10:00:00.123Z", time.Date(2026, 11, 22, 10, 0, 0, 123e6, time.UTC), true},
		{"2026-11-22T10:00:00.123456789Z", time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC), true},
		{"2026-11-22T11:00:00+01:00", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), true},
		{"", time.Time{}, false},
		{"2026-11-22", time.Time{}, false},
		{"2026-11-22 10:00:00Z", time.Time{}, false},
		{"1719446400", time.Time{}, false},
	}
	for _, c := range cases {
		got, err := server.ParseTime(c.in)
		if c.ok != (err == nil) || !got.Equal(c.want) || (c.ok && got.Location() != time.UTC) {
			t.Errorf("%q: got %v, %v", c.in, got, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"168h", 168 * time.Hour, true},
		{"90s", 90 * time.Second, true},
		{"0s", 0, true},
		{"1h30m", 90 * time.Minute, true},
		{"-1s", 0, false},
		{"", 0, false},
		{"7d", 0, false},
		{"10", 0, false},
	}
	for _, c := range cases {
		got, err := server.ParseDuration(c.in)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("%q: got %v, %v", c.in, got, err)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	w := httptest.NewRecorder()
	if err := server.WriteJSON(w, http.StatusNoContent, nil); err != nil || w.Code != 204 || w.Body.Len() != 0 {
		t.Fatalf("204: %d %q %v", w.Code, w.Body, err)
	}
	w = httptest.NewRecorder()
	if err := server.WriteJSON(w, http.StatusCreated, map[string]int{"a": 1}); err != nil || w.Code != 201 ||
		w.Header().Get("Content-Type") != "application/json" || strings.TrimSpace(w.Body.String()) != `{"a":1}` {
		t.Fatalf("201: %d %q %v", w.Code, w.Body, err)
	}
	// A value JSON cannot encode is an error before anything is written.
	w = httptest.NewRecorder()
	if err := server.WriteJSON(w, http.StatusOK, map[string]any{"f": func() {}}); err == nil || w.Body.Len() != 0 {
		t.Fatalf("unencodable value: %v, body %q", err, w.Body)
	}
}

// TestDecodeJSONStrict: what encoding/json resolves silently is refused,
// wherever it sits: a name given twice in any object (escaped or not, in
// free-form values too), and a struct field named in another case, also
// in structs inside slices and maps. Each refusal says what it found and
// where.
func TestDecodeJSONStrict(t *testing.T) {
	type event struct {
		ID   string         `json:"id"`
		Tags map[string]any `json:"tags"`
	}
	type body struct {
		Name   string           `json:"name"`
		Events []event          `json:"events"`
		ByKey  map[string]event `json:"by_key"`
		Free   any              `json:"free"`
		Raw    json.RawMessage  `json:"raw"`
	}
	for _, c := range []struct{ in, want string }{
		{`{"name":"a","events":[{"id":"1","tags":{"x":1}}],"by_key":{"k":{"id":"2"}},"free":{"a":[{"b":1}]},"raw":{"c":{"d":2}}}`, ""},
		{`{"name":"a","name":"b"}`, `key "name" appears twice in the body`},
		{`{"name":"a","n\u0061me":"b"}`, `key "name" appears twice in the body`},
		{`{"events":[{"id":"1"},{"id":"2","id":"3"}]}`, `key "id" appears twice in the object at /events/1`},
		{`{"events":[{"id":"1","tags":{"x":1,"x":2}}]}`, `key "x" appears twice in the object at /events/0/tags`},
		{`{"free":{"a":[{"b":1,"b":2}]}}`, `key "b" appears twice in the object at /free/a/0`},
		{`{"raw":{"c":{"d":1,"d":2}}}`, `key "d" appears twice in the object at /raw/c`},
		{`{"by_key":{"k":{},"k":{}}}`, `key "k" appears twice in the object at /by_key`},
		{`{"Name":"a"}`, `unknown field "Name" in the body; field names are case-sensitive: did you mean "name"?`},
		{`{"events":[{"ID":"1"}]}`, `unknown field "ID" in the object at /events/0; field names are case-sensitive: did you mean "id"?`},
		{`{"by_key":{"k":{"Id":"1"}}}`, `unknown field "Id" in the object at /by_key/k; field names are case-sensitive: did you mean "id"?`},
	} {
		var v body
		err := server.DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(c.in)), &v)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.in, err)
			}
			continue
		}
		var se *server.Error
		if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Error(), c.want) {
			t.Errorf("%s: got %v, want 400 saying %s", c.in, err, c.want)
		}
	}
}

package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestUnknownQueryParametersAreRefused: on every route, a query parameter
// the route does not take, or one given twice, is refused with 400 naming
// it, and nothing is done.
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	srv := startTables(t, nil)
	if r := srv.do(t, "PUT", "/v1/tables/t", "", `{}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	cases := []struct{ method, path, param string }{
		{"GET", "/v1/tables/t/items?limt=5", "limt"},
		{"GET", "/v1/tables/t/items?limit=5&Limit=6", "Limit"},
		{"GET", "/v1/tables/t?verbose=1", "verbose"},
		{"DELETE", "/v1/tables/t?force=true", "force"},
		{"PUT", "/v1/tables/t/items/k?ttl=1h", "ttl"},
		{"GET", "/v1/admin/tables?x", "x"},
		{"GET", "/healthz?probe=1", "probe"},
		{"GET", "/readyz?probe=1", "probe"},
	}
	for _, c := range cases {
		r := srv.do(t, c.method, c.path, "", `{"timestamp":"2026-03-01T12:00:00Z","attributes":{}}`)
		if r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_argument" || !strings.Contains(string(r.body), `\"`+c.param+`\"`) {
			t.Errorf("%s %s: %d %s, want 400 invalid_argument naming %q", c.method, c.path, r.status, r.body, c.param)
		}
	}
	if r := srv.do(t, "GET", "/v1/tables/t/items?limit=5&limit=6", "", nil); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "given 2 times") {
		t.Errorf("a repeated parameter: %d %s", r.status, r.body)
	}
	if r := srv.do(t, "GET", "/v1/tables/t/items?limit=%zz", "", nil); r.status != http.StatusBadRequest {
		t.Errorf("a malformed query string: %d %s", r.status, r.body)
	}
	// The refused requests did nothing: the table and no item are there.
	if r := srv.do(t, "GET", "/v1/tables/t/items/k", "", nil); r.status != http.StatusNotFound {
		t.Errorf("the refused PUT wrote: %d %s", r.status, r.body)
	}
	if r := srv.do(t, "GET", "/v1/tables/t", "", nil); r.status != http.StatusOK {
		t.Errorf("the refused DELETE deleted: %d %s", r.status, r.body)
	}
	// Declared parameters still work.
	if r := srv.do(t, "GET", "/v1/tables/t/items?limit=5&after=2026-03-01T12:00:00Z", "", nil); r.status != http.StatusOK {
		t.Errorf("declared parameters: %d %s", r.status, r.body)
	}
}

// TestUnescapedPlusInTimes: "+01:00" sent unescaped in a query string
// arrives as " 01:00"; the refusal says to send %2B.
func TestUnescapedPlusInTimes(t *testing.T) {
	srv := startTables(t, nil)
	if r := srv.do(t, "PUT", "/v1/tables/t", "", `{}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	r := srv.do(t, "GET", "/v1/tables/t/items?after=2026-03-01T12:00:00+01:00", "", nil)
	if r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_argument" ||
		!strings.Contains(string(r.body), "%2B") || !strings.Contains(string(r.body), "after") {
		t.Fatalf("unescaped +: %d %s, want 400 saying to send %%2B", r.status, r.body)
	}
	if !strings.Contains(string(r.body), "2026-03-01T12:00:00%2B01:00") {
		t.Errorf("the message does not show the escaped time: %s", r.body)
	}
	if r := srv.do(t, "GET", "/v1/tables/t/items?after=2026-03-01T12:00:00%2B01:00", "", nil); r.status != http.StatusOK {
		t.Errorf("escaped +: %d %s", r.status, r.body)
	}
	// Not every space is a '+': a time that is wrong anyway gets the
	// ordinary message.
	r = srv.do(t, "GET", "/v1/tables/t/items?after=yesterday+noon", "", nil)
	if r.status != http.StatusBadRequest || strings.Contains(string(r.body), "%2B") {
		t.Errorf("a bad time: %d %s", r.status, r.body)
	}
}

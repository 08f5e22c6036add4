package server

import (
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestQuickQueryMatchesParseQuery holds the allocation-free readers of
// the query string (queryAllowed, queryGet) to url.ParseQuery, which
// checkQuery and the handlers used before: queryAllowed may only say yes
// where the full check finds nothing wrong, and queryGet must return what
// url.Values.Get does.
func TestQuickQueryMatchesParseQuery(t *testing.T) {
	allowed := []string{"limit", "min_timestamp", "page_token"}
	queries := []string{
		"", "limit=100", "limit=100&page_token=abc", "limit=1&limit=2", "limt=5", "Limit=5",
		"limit", "limit=", "=5", "&", "&&limit=3&&", "limit=3&", "&limit=3",
		"limit=%31", "l%69mit=1", "limit=1+2", "min_timestamp=2026-03-01T12:00:00+01:00",
		"min_timestamp=2026-03-01T12:00:00%2B01:00", "limit=1;page_token=x", "limit=%zz",
		"page_token=a=b", "limit=1&page_token=x&min_timestamp=y", "limit=1&page_token=x&limit=2",
		strings.Repeat("&", 100) + "limit=1",
	}
	for _, raw := range queries {
		r := httptest.NewRequest("GET", "/x?"+raw, nil)
		if r.URL.RawQuery != raw {
			t.Fatalf("%q: the request's query is %q", raw, r.URL.RawQuery)
		}
		v, err := url.ParseQuery(raw)
		full := err == nil
		for name, vals := range v {
			full = full && slices.Contains(allowed, name) && len(vals) == 1
		}
		if queryAllowed(raw, allowed) && !full {
			t.Errorf("queryAllowed(%q) = true; url.ParseQuery gives %v, %v", raw, v, err)
		}
		if err := checkQuery(r, allowed); (err == nil) != full {
			t.Errorf("checkQuery(%q) = %v; url.ParseQuery gives %v", raw, err, v)
		}
		for _, name := range append(allowed, "x", "") {
			if got, want := queryGet(r, name), r.URL.Query().Get(name); got != want {
				t.Errorf("queryGet(%q, %q) = %q, want %q", raw, name, got, want)
			}
		}
	}
	if r := httptest.NewRequest("GET", "/x?limit=100&page_token=abc", nil); testing.AllocsPerRun(100, func() {
		_ = checkQuery(r, allowed)
		_ = queryGet(r, "page_token")
	}) != 0 {
		t.Error("checkQuery and queryGet allocate on a plain query string")
	}
}

// TestCleanPath: a path with a ".", ".." or empty segment, a trailing
// slash aside, is refused.
func TestCleanPath(t *testing.T) {
	for p, want := range map[string]bool{
		"": true, "/": true, "/v1": true, "/v1/": true, "/v1/lists/a/b/_/e/items": true,
		"/v1/tables/t/items/%2E%2E": true, "/ui/": true, "/v1/a.b/..c": true,
		"//": false, "/v1//x": false, "/v1/./x": false, "/v1/..": false, "/v1/../": false, "/.": false, "/v1/x/.": false,
	} {
		if got := cleanPath(p); got != want {
			t.Errorf("cleanPath(%q) = %v, want %v", p, got, want)
		}
	}
}

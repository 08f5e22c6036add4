package server_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// condItem is an item as the conditional routes answer it.
type condItem struct {
	Key        string         `json:"key"`
	Attributes map[string]any `json:"attributes"`
	Version    string         `json:"version"`
}

// TestTablesConditionalWrites: If-None-Match: * creates only, If-Match
// compares and sets by the item's version (its ETag), a failed
// precondition is 412 failed_precondition and writes nothing.
func TestTablesConditionalWrites(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create table", e.do(t, "PUT", "/v1/tables/t", "", ""), 201, "")
	path := tablesItemPath("t", "k")
	put := func(body string, headers ...string) response {
		return call(t, "PUT", e.url+path, "", strings.NewReader(body), headers...)
	}
	r := put(`{"timestamp":"2026-01-01T00:00:00Z","attributes":{"a":1}}`, "If-None-Match: *")
	tablesExpect(t, "create-only put", r, 200, "")
	v1 := tablesDecode[condItem](t, r)
	if v1.Version == "" || r.header.Get("ETag") != `"`+v1.Version+`"` {
		t.Fatalf("version %q, ETag %q", v1.Version, r.header.Get("ETag"))
	}
	tablesExpect(t, "create-only put of an existing key",
		put(`{"timestamp":"2026-01-01T00:00:00Z","attributes":{"a":2}}`, "If-None-Match: *"), 412, "failed_precondition")
	g := e.do(t, "GET", path, "", nil)
	tablesExpect(t, "get", g, 200, "")
	if got := tablesDecode[condItem](t, g); got.Version != v1.Version || got.Attributes["a"] != 1.0 || g.header.Get("ETag") != `"`+v1.Version+`"` {
		t.Fatalf("after a refused put: %+v, ETag %q", got, g.header.Get("ETag"))
	}

	r = put(`{"timestamp":"2026-01-01T00:00:00Z","attributes":{"a":3}}`, `If-Match: "`+v1.Version+`"`)
	tablesExpect(t, "put at the current version", r, 200, "")
	v2 := tablesDecode[condItem](t, r)
	tablesExpect(t, "put at a stale version",
		put(`{"timestamp":"2026-01-01T00:00:00Z","attributes":{"a":4}}`, `If-Match: "`+v1.Version+`"`), 412, "failed_precondition")
	tablesExpect(t, "delete at a stale version",
		call(t, "DELETE", e.url+path, "", nil, `If-Match: "`+v1.Version+`"`), 412, "failed_precondition")
	if got := tablesDecode[condItem](t, e.do(t, "GET", path, "", nil)); got.Version != v2.Version || got.Attributes["a"] != 3.0 {
		t.Fatalf("after refused writes: %+v, want version %s", got, v2.Version)
	}
	tablesExpect(t, "put if any version of a missing key",
		call(t, "PUT", e.url+tablesItemPath("t", "none"), "", strings.NewReader(`{"timestamp":"2026-01-01T00:00:00Z"}`), "If-Match: *"), 412, "failed_precondition")
	tablesExpect(t, "the refused put wrote nothing", e.do(t, "GET", tablesItemPath("t", "none"), "", nil), 404, "not_found")

	for _, h := range []string{"If-None-Match: \"x\"", "If-Match: W/\"x\"", "If-Match: \"a\", \"b\""} {
		tablesExpect(t, h, put(`{"timestamp":"2026-01-01T00:00:00Z"}`, h), 400, "invalid_argument")
	}
	tablesExpect(t, "delete at the current version",
		call(t, "DELETE", e.url+path, "", nil, `If-Match: "`+v2.Version+`"`), 204, "")
	tablesExpect(t, "deleted", e.do(t, "GET", path, "", nil), 404, "not_found")
}

// TestTablesCompareAndSetRace: writers that all read one version and put
// at it at once: exactly one answers 200, the others 412.
func TestTablesCompareAndSetRace(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create table", e.do(t, "PUT", "/v1/tables/t", "", ""), 201, "")
	path := tablesItemPath("t", "k")
	for round := range 3 {
		r := e.do(t, "PUT", path, "", `{"timestamp":"2026-01-01T00:00:00Z"}`)
		tablesExpect(t, "base put", r, 200, "")
		base := tablesDecode[condItem](t, r)
		const writers = 4
		statuses := make([]int, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				body := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","attributes":{"w":%d}}`, w)
				statuses[w] = call(t, "PUT", e.url+path, "", strings.NewReader(body), `If-Match: "`+base.Version+`"`).status
			})
		}
		wg.Wait()
		won := 0
		for w, s := range statuses {
			switch s {
			case 200:
				won++
			case 412:
			default:
				t.Fatalf("round %d: writer %d answered %d", round, w, s)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d writers won (%v), want exactly 1", round, won, statuses)
		}
	}
}

func TestTablesPatch(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create table", e.do(t, "PUT", "/v1/tables/t", "", ""), 201, "")
	path := tablesItemPath("t", "k")
	tablesExpect(t, "patch of a missing item", e.do(t, "PATCH", path, "", `{"attributes":{"a":1}}`), 404, "not_found")
	r := e.do(t, "PUT", path, "", `{"timestamp":"2026-01-01T00:00:00Z","attributes":{"a":1,"b":{"c":2,"d":3},"e":"x"}}`)
	tablesExpect(t, "put", r, 200, "")
	v1 := tablesDecode[condItem](t, r)
	r = e.do(t, "PATCH", path, "", `{"attributes":{"b":{"c":null},"e":"y","f":[1]}}`)
	tablesExpect(t, "patch", r, 200, "")
	got := tablesDecode[condItem](t, r)
	if want := `map[a:1 b:map[d:3] e:y f:[1]]`; fmt.Sprint(got.Attributes) != want || got.Version == v1.Version {
		t.Fatalf("patched %v (version %s), want %s and a new version", got.Attributes, got.Version, want)
	}
	if read := tablesDecode[condItem](t, e.do(t, "GET", path, "", nil)); fmt.Sprint(read.Attributes) != fmt.Sprint(got.Attributes) {
		t.Fatalf("read %v after the patch answered %v", read.Attributes, got.Attributes)
	}
	tablesExpect(t, "patch at a stale version",
		call(t, "PATCH", e.url+path, "", strings.NewReader(`{"attributes":{"a":9}}`), `If-Match: "`+v1.Version+`"`), 412, "failed_precondition")
	tablesExpect(t, "patch with If-None-Match",
		call(t, "PATCH", e.url+path, "", strings.NewReader(`{"attributes":{"a":9}}`), "If-None-Match: *"), 400, "invalid_argument")
	tablesExpect(t, "patch of a non-object", e.do(t, "PATCH", path, "", `{"attributes":[1]}`), 400, "invalid_argument")
	if read := tablesDecode[condItem](t, e.do(t, "GET", path, "", nil)); read.Version != got.Version {
		t.Fatal("a refused patch wrote")
	}
}

func TestTablesBatchGet(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create table", e.do(t, "PUT", "/v1/tables/t", "", ""), 201, "")
	for _, k := range []string{"a", "c/d"} {
		tablesExpect(t, "put", e.do(t, "PUT", tablesItemPath("t", k), "", `{"timestamp":"2026-01-01T00:00:00Z","attributes":{"k":"`+k+`"}}`), 200, "")
	}
	r := e.do(t, "POST", "/v1/tables/t/batch-get", "", `{"keys":["c/d","b","a","c/d"]}`)
	tablesExpect(t, "batch get", r, 200, "")
	out := tablesDecode[struct {
		Items   []condItem `json:"items"`
		Missing []string   `json:"missing"`
	}](t, r)
	if len(out.Items) != 2 || out.Items[0].Key != "c/d" || out.Items[1].Key != "a" || out.Items[0].Version == "" ||
		fmt.Sprint(out.Missing) != "[b]" {
		t.Fatalf("batch get = %+v", out)
	}
	keys := make([]string, 101)
	for i := range keys {
		keys[i] = fmt.Sprintf("%q", fmt.Sprint("k", i))
	}
	tablesExpect(t, "101 keys", e.do(t, "POST", "/v1/tables/t/batch-get", "", `{"keys":[`+strings.Join(keys, ",")+`]}`), 400, "invalid_argument")
	r = e.do(t, "POST", "/v1/tables/t/batch-get", "", `{"keys":[`+strings.Join(keys[:100], ",")+`]}`)
	tablesExpect(t, "100 keys", r, 200, "")
	if n := len(tablesDecode[struct {
		Missing []string `json:"missing"`
	}](t, r).Missing); n != 100 {
		t.Fatalf("100 keys: %d missing", n)
	}
	tablesExpect(t, "no keys field", e.do(t, "POST", "/v1/tables/t/batch-get", "", `{}`), 400, "invalid_argument")
	tablesExpect(t, "missing table", e.do(t, "POST", "/v1/tables/nope/batch-get", "", `{"keys":["a"]}`), 404, "not_found")
}

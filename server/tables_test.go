package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// tablesServer is a server with the shared-tables feature over a real store
// whose clock the test drives.
type tablesServer struct {
	url   string
	clock *storetest.Clock
	st    store.Store
}

func startTables(t *testing.T, auth *server.Auth) *tablesServer {
	t.Helper()
	clock := storetest.NewClock(storetest.Epoch)
	st := testbackend.Pebble(t, clock.Now)
	reg, err := multitable.New(context.Background(), st, multitable.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, clock.Now), Auth: auth, Now: clock.Now, Features: []server.Feature{server.Tables(reg)}})
	return &tablesServer{url: ts.URL, clock: clock, st: st}
}

// do sends a request with a JSON body (nil: none).
func (e *tablesServer) do(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		return call(t, method, e.url+path, token, nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	return call(t, method, e.url+path, token, rd)
}

// tablesItemPath escapes a key for a path segment. Dot segments are
// escaped too: a literal "." or ".." would be resolved away by URL
// cleaning before routing.
func tablesItemPath(table, key string) string {
	seg := url.PathEscape(key)
	if key == "." || key == ".." {
		seg = strings.ReplaceAll(key, ".", "%2E")
	}
	return "/v1/tables/" + url.PathEscape(table) + "/items/" + seg
}

type tablesItem struct {
	Key        string          `json:"key"`
	Timestamp  string          `json:"timestamp"`
	Attributes json.RawMessage `json:"attributes"`
	ExpiresAt  *string         `json:"expires_at"`
}

type tablesPage struct {
	Items         []tablesItem `json:"items"`
	NextPageToken string       `json:"next_page_token"`
}

func tablesDecode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("status %d body %q: %v", r.status, r.body, err)
	}
	return v
}

// expect fails unless r has the status and, for errors, the API code.
func tablesExpect(t *testing.T, what string, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d (%s), want %d", what, r.status, r.body, status)
	}
	if code != "" {
		if got := r.errorCode(t); got != code {
			t.Fatalf("%s: code %q, want %q", what, got, code)
		}
	}
}

func TestTablesAPI(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create", e.do(t, "PUT", "/v1/tables/orders", "", `{"default_ttl":"90s"}`), 201, "")
	got := e.do(t, "PUT", "/v1/tables/orders", "", `{"default_ttl":"90s"}`)
	tablesExpect(t, "identical create", got, 200, "")
	if tb := tablesDecode[map[string]string](t, got); tb["name"] != "orders" || tb["default_ttl"] != "90s" {
		t.Fatalf("table %v", tb)
	}
	got = e.do(t, "PUT", "/v1/tables/orders", "", `{"default_ttl":"1h"}`)
	tablesExpect(t, "changed default ttl", got, 200, "")
	if tb := tablesDecode[map[string]string](t, got); tb["default_ttl"] != "1h" {
		t.Fatalf("table after the change %v", tb)
	}
	got = e.do(t, "PUT", "/v1/tables/orders", "", `{}`)
	tablesExpect(t, "no default ttl keeps it", got, 200, "")
	if tb := tablesDecode[map[string]string](t, got); tb["default_ttl"] != "1h" {
		t.Fatalf("table after a put without default_ttl %v", tb)
	}
	tablesExpect(t, "changed back", e.do(t, "PUT", "/v1/tables/orders", "", `{"default_ttl":"90s"}`), 200, "")
	tablesExpect(t, "bad name", e.do(t, "PUT", "/v1/tables/"+url.PathEscape("a b"), "", `{}`), 400, "invalid_argument")
	tablesExpect(t, "long name", e.do(t, "PUT", "/v1/tables/"+strings.Repeat("x", 129), "", `{}`), 400, "invalid_argument")
	tablesExpect(t, "bad ttl", e.do(t, "PUT", "/v1/tables/x", "", `{"default_ttl":"soon"}`), 400, "invalid_argument")
	tablesExpect(t, "unknown field", e.do(t, "PUT", "/v1/tables/x", "", `{"ttl":"1s"}`), 400, "invalid_argument")
	tablesExpect(t, "no table", e.do(t, "GET", "/v1/tables/x", "", nil), 404, "not_found")
	tablesExpect(t, "create without a body", e.do(t, "PUT", "/v1/tables/nobody", "", nil), 201, "")
	tablesExpect(t, "identical without a body", e.do(t, "PUT", "/v1/tables/nobody", "", `{"default_ttl":"0s"}`), 200, "")

	// Put, get: the default TTL gives an expiry; "0s" means none.
	r := e.do(t, "PUT", tablesItemPath("orders", "o-1"), "", `{"timestamp":"2026-03-01T12:00:00.123Z","attributes":{"total": 12.5, "lines":[1,2]}}`)
	tablesExpect(t, "put", r, 200, "")
	it := tablesDecode[tablesItem](t, e.do(t, "GET", tablesItemPath("orders", "o-1"), "", nil))
	if it.Key != "o-1" || it.Timestamp != "2026-03-01T12:00:00.123Z" || string(it.Attributes) != `{"total":12.5,"lines":[1,2]}` ||
		it.ExpiresAt == nil || *it.ExpiresAt != "2026-03-01T12:01:30Z" {
		t.Fatalf("item %+v", it)
	}
	tablesExpect(t, "put without expiry", e.do(t, "PUT", tablesItemPath("orders", "o-2"), "", `{"timestamp":"2026-03-01T12:00:01Z","attributes":{},"ttl":"0s"}`), 200, "")
	r = e.do(t, "GET", tablesItemPath("orders", "o-2"), "", nil)
	if !bytes.Contains(r.body, []byte(`"expires_at":null`)) {
		t.Fatalf("item without expiry: %s", r.body)
	}
	tablesExpect(t, "put with own ttl", e.do(t, "PUT", tablesItemPath("orders", "o-3"), "", `{"timestamp":"2026-03-01T12:00:02Z","attributes":{"a":1},"ttl":"10s"}`), 200, "")

	// Listing: ordered by timestamp, strictly after, paged.
	page := tablesDecode[tablesPage](t, e.do(t, "GET", "/v1/tables/orders/items?limit=2", "", nil))
	if len(page.Items) != 2 || page.Items[0].Key != "o-1" || page.Items[1].Key != "o-2" || page.NextPageToken == "" {
		t.Fatalf("first page %+v", page)
	}
	page = tablesDecode[tablesPage](t, e.do(t, "GET", "/v1/tables/orders/items?limit=2&page_token="+url.QueryEscape(page.NextPageToken), "", nil))
	if len(page.Items) != 1 || page.Items[0].Key != "o-3" || page.NextPageToken != "" {
		t.Fatalf("second page %+v", page)
	}
	page = tablesDecode[tablesPage](t, e.do(t, "GET", "/v1/tables/orders/items?after=2026-03-01T12:00:01Z", "", nil))
	if len(page.Items) != 1 || page.Items[0].Key != "o-3" {
		t.Fatalf("after page %+v", page)
	}
	r = e.do(t, "GET", "/v1/tables/orders/items?after=2030-01-01T00:00:00Z", "", nil)
	if !bytes.Contains(r.body, []byte(`"items":[]`)) || bytes.Contains(r.body, []byte("next_page_token")) {
		t.Fatalf("empty page body %s", r.body)
	}
	for _, q := range []string{"limit=0", "limit=10001", "limit=x", "after=yesterday", "page_token=%21%21"} {
		tablesExpect(t, q, e.do(t, "GET", "/v1/tables/orders/items?"+q, "", nil), 400, "invalid_argument")
	}

	// Expiry: gone at the instant from get and list.
	e.clock.Set(storetest.Epoch.Add(10 * time.Second))
	tablesExpect(t, "get expired", e.do(t, "GET", tablesItemPath("orders", "o-3"), "", nil), 404, "not_found")
	page = tablesDecode[tablesPage](t, e.do(t, "GET", "/v1/tables/orders/items", "", nil))
	if len(page.Items) != 2 {
		t.Fatalf("listing after expiry %+v", page)
	}

	// Delete: 204, then 404, and again 204.
	tablesExpect(t, "delete", e.do(t, "DELETE", tablesItemPath("orders", "o-1"), "", nil), 204, "")
	tablesExpect(t, "get deleted", e.do(t, "GET", tablesItemPath("orders", "o-1"), "", nil), 404, "not_found")
	tablesExpect(t, "delete again", e.do(t, "DELETE", tablesItemPath("orders", "o-1"), "", nil), 204, "")

	// Every table, and dropping one.
	tablesExpect(t, "create second", e.do(t, "PUT", "/v1/tables/a.b-c_D", "", `{}`), 201, "")
	list := tablesDecode[map[string][]map[string]string](t, e.do(t, "GET", "/v1/tables", "", nil))
	if len(list["tables"]) != 3 || list["tables"][0]["name"] != "a.b-c_D" || list["tables"][0]["default_ttl"] != "0s" {
		t.Fatalf("tables %v", list)
	}
	tablesExpect(t, "drop", e.do(t, "DELETE", "/v1/tables/orders", "", nil), 204, "")
	tablesExpect(t, "get in dropped", e.do(t, "GET", tablesItemPath("orders", "o-2"), "", nil), 404, "not_found")
	tablesExpect(t, "put in dropped", e.do(t, "PUT", tablesItemPath("orders", "o-2"), "", `{"timestamp":"2026-03-01T12:00:00Z"}`), 404, "not_found")
}

// TestTablesBadInputWritesNothing sends each kind of bad item and checks
// the error code and that the store holds exactly what it held before.
func TestTablesBadInputWritesNothing(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create", e.do(t, "PUT", "/v1/tables/t", "", `{}`), 201, "")
	tablesExpect(t, "put", e.do(t, "PUT", tablesItemPath("t", "k"), "", `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"v":1}}`), 200, "")
	rows := func() int64 {
		s, err := e.st.Stats(context.Background(), multitable.ItemsTable)
		if err != nil {
			t.Fatal(err)
		}
		return s.Rows
	}
	before := rows()
	big := `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"x":"` + strings.Repeat("a", 256<<10) + `"}}`
	huge := `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"x":"` + strings.Repeat("a", 9<<20) + `"}}`
	for _, c := range []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"attributes over 256 KiB", "k", big, 413, "too_large"},
		{"body over 8 MiB", "k", huge, 413, "too_large"},
		{"malformed JSON", "k", `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"v":}`, 400, "invalid_argument"},
		{"attributes not an object", "k", `{"timestamp":"2026-03-01T12:00:00Z","attributes":[1]}`, 400, "invalid_argument"},
		{"no timestamp", "k", `{"attributes":{}}`, 400, "invalid_argument"},
		{"bad timestamp", "k", `{"timestamp":"noon","attributes":{}}`, 400, "invalid_argument"},
		{"numeric timestamp", "k", `{"timestamp":1700000000,"attributes":{}}`, 400, "invalid_argument"},
		{"bad ttl", "k", `{"timestamp":"2026-03-01T12:00:00Z","ttl":"-1s"}`, 400, "invalid_argument"},
		{"unknown field", "k", `{"timestamp":"2026-03-01T12:00:00Z","attrs":{}}`, 400, "invalid_argument"},
		{"empty body", "k", ``, 400, "invalid_argument"},
		{"key too long", strings.Repeat("k", multitable.MaxKeyBytes+1), `{"timestamp":"2026-03-01T12:00:00Z"}`, 400, "invalid_argument"},
		{"key not UTF-8", "k\xff", `{"timestamp":"2026-03-01T12:00:00Z"}`, 400, "invalid_argument"},
	} {
		tablesExpect(t, c.name, e.do(t, "PUT", tablesItemPath("t", c.key), "", c.body), c.status, c.code)
	}
	if after := rows(); after != before {
		t.Fatalf("refused requests wrote: %d rows before, %d after", before, after)
	}
	if it := tablesDecode[tablesItem](t, e.do(t, "GET", tablesItemPath("t", "k"), "", nil)); string(it.Attributes) != `{"v":1}` {
		t.Fatalf("item changed: %s", it.Attributes)
	}
}

// TestTablesAwkwardKeys round-trips keys that need escaping in a path.
func TestTablesAwkwardKeys(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create", e.do(t, "PUT", "/v1/tables/t", "", `{}`), 201, "")
	ks := []string{"a/b", "#frag", "?q=1", "%2F", "a b", "\x00", "x\x00y", "日本", "..", ".", "a_b", strings.Repeat("k", multitable.MaxKeyBytes)}
	for i, k := range ks {
		body := fmt.Sprintf(`{"timestamp":"2026-03-01T12:00:%02dZ","attributes":{"i":%d}}`, i, i)
		tablesExpect(t, fmt.Sprintf("put %q", k), e.do(t, "PUT", tablesItemPath("t", k), "", body), 200, "")
	}
	for i, k := range ks {
		it := tablesDecode[tablesItem](t, e.do(t, "GET", tablesItemPath("t", k), "", nil))
		if it.Key != k || string(it.Attributes) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("get %q: %+v", k, it)
		}
	}
	page := tablesDecode[tablesPage](t, e.do(t, "GET", "/v1/tables/t/items", "", nil))
	var got []string
	for _, it := range page.Items {
		got = append(got, it.Key)
	}
	if !slices.Equal(got, ks) {
		t.Fatalf("listing %q, want %q", got, ks)
	}
}

const tablesAuthYAML = `
tokens:
  - token: admin-token
    scopes: [admin]
  - token: all-token
    scopes: ["*:*"]
  - token: a-token
    scopes: ["table:tenant_a"]
  - token: b-token
    scopes: ["table:tenant_b"]
  - token: index-token
    scopes: ["index:tenant_a"]
`

// TestTablesAuth checks API.md "Auth" on every shared-table route: 401
// without a known token, 403 for a token without table:NAME whether or not
// the table exists (same body), and a refused request changes nothing.
func TestTablesAuth(t *testing.T) {
	e := startTables(t, loadAuth(t, tablesAuthYAML))
	// Each tenant creates its own table with its own token.
	tablesExpect(t, "a creates", e.do(t, "PUT", "/v1/tables/tenant_a", "a-token", `{}`), 201, "")
	tablesExpect(t, "b creates", e.do(t, "PUT", "/v1/tables/tenant_b", "b-token", `{}`), 201, "")
	tablesExpect(t, "a puts", e.do(t, "PUT", tablesItemPath("tenant_a", "k"), "a-token", `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"owner":"a"}}`), 200, "")

	routes := func(table string) []struct{ method, path, body string } {
		return []struct{ method, path, body string }{
			{"PUT", "/v1/tables/" + table, `{}`},
			{"GET", "/v1/tables/" + table, ""},
			{"DELETE", "/v1/tables/" + table, ""},
			{"GET", "/v1/tables/" + table + "/items", ""},
			{"PUT", tablesItemPath(table, "k"), `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"owner":"intruder"}}`},
			{"GET", tablesItemPath(table, "k"), ""},
			{"DELETE", tablesItemPath(table, "k"), ""},
		}
	}
	body := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for _, rt := range routes("tenant_a") {
		what := rt.method + " " + rt.path
		tablesExpect(t, what+" without token", e.do(t, rt.method, rt.path, "", body(rt.body)), 401, "unauthenticated")
		tablesExpect(t, what+" unknown token", e.do(t, rt.method, rt.path, "nope", body(rt.body)), 401, "unauthenticated")
		tablesExpect(t, what+" other tenant", e.do(t, rt.method, rt.path, "b-token", body(rt.body)), 403, "permission_denied")
		tablesExpect(t, what+" index scope", e.do(t, rt.method, rt.path, "index-token", body(rt.body)), 403, "permission_denied")
	}
	// A 403 reads the same for an existing table and a missing one.
	for i, rt := range routes("tenant_a") {
		ghost := routes("ghost")[i]
		exists := e.do(t, rt.method, rt.path, "b-token", body(rt.body))
		missing := e.do(t, ghost.method, ghost.path, "b-token", body(ghost.body))
		if exists.status != missing.status || strings.ReplaceAll(string(exists.body), "tenant_a", "X") != strings.ReplaceAll(string(missing.body), "ghost", "X") {
			t.Fatalf("%s: 403 differs for existing and missing tables:\n%s\n%s", rt.path, exists.body, missing.body)
		}
	}
	// Nothing the intruders sent reached the store.
	it := tablesDecode[tablesItem](t, e.do(t, "GET", tablesItemPath("tenant_a", "k"), "a-token", nil))
	if string(it.Attributes) != `{"owner":"a"}` {
		t.Fatalf("tenant_a's item changed: %s", it.Attributes)
	}
	tablesExpect(t, "tenant_a still exists", e.do(t, "GET", "/v1/tables/tenant_a", "admin-token", nil), 200, "")

	// The collection route needs admin or *:*; admin routes need admin.
	tablesExpect(t, "list tables as tenant", e.do(t, "GET", "/v1/tables", "a-token", nil), 403, "permission_denied")
	tablesExpect(t, "list tables as *:*", e.do(t, "GET", "/v1/tables", "all-token", nil), 200, "")
	tablesExpect(t, "list tables as admin", e.do(t, "GET", "/v1/tables", "admin-token", nil), 200, "")
	tablesExpect(t, "admin tables as *:*", e.do(t, "GET", "/v1/admin/tables", "all-token", nil), 403, "permission_denied")
	tablesExpect(t, "admin tables as tenant", e.do(t, "GET", "/v1/admin/tables", "a-token", nil), 403, "permission_denied")
	// *:* and admin reach every table.
	tablesExpect(t, "*:* reads a", e.do(t, "GET", tablesItemPath("tenant_a", "k"), "all-token", nil), 200, "")
	tablesExpect(t, "admin puts into b", e.do(t, "PUT", tablesItemPath("tenant_b", "k"), "admin-token", `{"timestamp":"2026-03-01T12:00:00Z"}`), 200, "")
	// A tenant may drop its own table.
	tablesExpect(t, "b drops b", e.do(t, "DELETE", "/v1/tables/tenant_b", "b-token", nil), 204, "")
}

// TestAdminTablesReportsLogicalTables checks the per-logical-table items
// and bytes in GET /v1/admin/tables.
func TestAdminTablesReportsLogicalTables(t *testing.T) {
	e := startTables(t, nil)
	tablesExpect(t, "create", e.do(t, "PUT", "/v1/tables/small", "", `{}`), 201, "")
	tablesExpect(t, "create", e.do(t, "PUT", "/v1/tables/other", "", `{"default_ttl":"1h"}`), 201, "")
	for i := range 3 {
		tablesExpect(t, "put", e.do(t, "PUT", tablesItemPath("small", fmt.Sprint("k", i)), "", `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"v":1}}`), 200, "")
	}
	var out struct {
		Tables        []adminTable `json:"tables"`
		LogicalTables []struct {
			Name       string `json:"name"`
			DefaultTTL string `json:"default_ttl"`
			Items      int64  `json:"items"`
			Bytes      int64  `json:"bytes"`
		} `json:"logical_tables"`
	}
	r := e.do(t, "GET", "/v1/admin/tables", "", nil)
	tablesExpect(t, "admin tables", r, 200, "")
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("admin tables body %s: %v", r.body, err)
	}
	if len(out.LogicalTables) != 2 {
		t.Fatalf("logical tables %+v", out.LogicalTables)
	}
	other, small := out.LogicalTables[0], out.LogicalTables[1]
	// Each item: 2-byte key + 7-byte attributes + 8-byte timestamp.
	if small.Name != "small" || small.Items != 3 || small.Bytes != 3*(2+7+8) || other.Name != "other" || other.Items != 0 || other.DefaultTTL != "1h" {
		t.Fatalf("logical tables %+v", out.LogicalTables)
	}
	if !slices.ContainsFunc(out.Tables, func(a adminTable) bool { return a.Name == multitable.ItemsTable && a.Rows > 0 }) {
		t.Fatalf("physical tables %+v lack %s", out.Tables, multitable.ItemsTable)
	}
}

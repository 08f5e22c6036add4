package multitable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
)

// The HTTP tests run the shared-tables routes with auth over each backend:
// tenants whose table names and keys would collide under a separator
// layout, each holding a token for its own table only.

const tenantsAuth = `
tokens:
  - token: tok-a
    scopes: ["table:a"]
  - token: tok-ab
    scopes: ["table:a_b"]
  - token: tok-admin
    scopes: [admin]
`

func TestHTTPTenantsPebble(t *testing.T) {
	testHTTPTenants(t, testbackend.Pebble(t, nil))
}

// TestHTTPTenantsDynamo runs when EBB_TEST_BACKENDS selects dynalite, and
// then fails, never skips, without EBB_DYNAMODB_ENDPOINT.
func TestHTTPTenantsDynamo(t *testing.T) {
	testHTTPTenants(t, testbackend.Dynamo(t, time.Now))
}

type client struct {
	t    *testing.T
	base string
}

func (c client) do(method, path, token, body string) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (c client) want(status int, method, path, token, body string) []byte {
	c.t.Helper()
	got, b := c.do(method, path, token, body)
	if got != status {
		c.t.Fatalf("%s %s as %s: %d %s, want %d", method, path, token, got, b, status)
	}
	return b
}

func testHTTPTenants(t *testing.T, st store.Store) {
	auth, err := server.ParseAuth([]byte(tenantsAuth))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := multitable.New(context.Background(), st, multitable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Auth: auth, Features: []server.Feature{server.Tables(reg)}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c := client{t, ts.URL}
	item := func(table, key string) string { return "/v1/tables/" + table + "/items/" + url.PathEscape(key) }

	c.want(201, "PUT", "/v1/tables/a", "tok-a", `{}`)
	c.want(201, "PUT", "/v1/tables/a_b", "tok-ab", `{}`)
	// "a" + "b_x" and "a_b" + "x" are the same string joined with "_".
	c.want(200, "PUT", item("a", "b_x"), "tok-a", `{"timestamp":"2026-01-01T00:00:00Z","attributes":{"owner":"a"}}`)
	c.want(200, "PUT", item("a_b", "x"), "tok-ab", `{"timestamp":"2026-01-01T00:00:00Z","attributes":{"owner":"a_b"}}`)
	c.want(404, "GET", item("a", "x"), "tok-a", "")
	c.want(404, "GET", item("a_b", "b_x"), "tok-ab", "")
	for _, tc := range []struct{ token, table, key, owner string }{{"tok-a", "a", "b_x", "a"}, {"tok-ab", "a_b", "x", "a_b"}} {
		var it struct {
			Key        string
			Attributes map[string]string
		}
		if err := json.Unmarshal(c.want(200, "GET", item(tc.table, tc.key), tc.token, ""), &it); err != nil || it.Attributes["owner"] != tc.owner {
			t.Fatalf("%s/%s: %+v %v", tc.table, tc.key, it, err)
		}
		var page struct{ Items []struct{ Key string } }
		if err := json.Unmarshal(c.want(200, "GET", "/v1/tables/"+tc.table+"/items", tc.token, ""), &page); err != nil ||
			len(page.Items) != 1 || page.Items[0].Key != tc.key {
			t.Fatalf("%s lists %+v %v", tc.table, page, err)
		}
	}
	// Each token reaches its own table only; nothing is written on a 403.
	c.want(403, "GET", item("a_b", "x"), "tok-a", "")
	c.want(403, "PUT", item("a_b", "x"), "tok-a", `{"timestamp":"2026-01-01T00:00:00Z","attributes":{"owner":"a"}}`)
	c.want(403, "DELETE", "/v1/tables/a", "tok-ab", "")
	c.want(403, "GET", "/v1/tables/a/items", "tok-ab", "")
	c.want(401, "GET", item("a", "b_x"), "", "")
	c.want(401, "GET", item("a", "b_x"), "tok-x", "")
	if b := c.want(200, "GET", item("a_b", "x"), "tok-admin", ""); !bytes.Contains(b, []byte(`"owner":"a_b"`)) {
		t.Fatalf("a_b's item changed: %s", b)
	}
	c.want(200, "GET", "/v1/tables/a", "tok-admin", "")
	c.want(204, "DELETE", "/v1/tables/a", "tok-a", "")
	c.want(200, "GET", item("a_b", "x"), "tok-ab", "")
}

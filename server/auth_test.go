package server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
)

const authYAML = `
tokens:
  - token: root-token
    name: operator
    scopes: [admin]
  - token: all-token
    scopes: ["*:*"]
  - token: events-token
    scopes: ["index:events", "list:user:v2"]
  - token: tenant-token
    scopes: ["table:tenant_a"]
`

func loadAuth(t *testing.T, yaml string) *server.Auth {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := server.LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestParseAuthRefusesBadFiles(t *testing.T) {
	cases := map[string]string{
		"empty":             ``,
		"no tokens":         `tokens: []`,
		"not yaml":          `tokens: [`,
		"unknown field":     "tokens:\n  - token: a\n    scope: [admin]\n",
		"empty token":       "tokens:\n  - token: \"\"\n    scopes: [admin]\n",
		"space in token":    "tokens:\n  - token: \"a b\"\n    scopes: [admin]\n",
		"repeated token":    "tokens:\n  - token: a\n    scopes: [admin]\n  - token: a\n    scopes: [\"*:*\"]\n",
		"no scopes":         "tokens:\n  - token: a\n",
		"unknown kind":      "tokens:\n  - token: a\n    scopes: [\"bucket:x\"]\n",
		"empty name":        "tokens:\n  - token: a\n    scopes: [\"index:\"]\n",
		"no colon":          "tokens:\n  - token: a\n    scopes: [reader]\n",
		"kind wildcard":     "tokens:\n  - token: a\n    scopes: [\"index:*\"]\n",
		"top-level typo":    "token:\n  - token: a\n    scopes: [admin]\n",
		"scopes not a list": "tokens:\n  - token: a\n    scopes: admin\n",
		"second document":   "tokens:\n  - token: a\n    scopes: [admin]\n---\ntokens:\n  - token: b\n    scopes: [admin]\n",
		"empty second doc":  "tokens:\n  - token: a\n    scopes: [admin]\n---\n",
		"index upper case":  "tokens:\n  - token: a\n    scopes: [\"index:Events\"]\n",
		"index too long":    "tokens:\n  - token: a\n    scopes: [\"index:a2345678901234567890123456789012\"]\n",
		"index reserved":    "tokens:\n  - token: a\n    scopes: [\"index:ebb_meta\"]\n",
		"table with slash":  "tokens:\n  - token: a\n    scopes: [\"table:a/b\"]\n",
		"list too long":     "tokens:\n  - token: a\n    scopes: [\"list:" + strings.Repeat("x", 257) + "\"]\n",
		"read of metrics":   "tokens:\n  - token: a\n    scopes: [\"read:metrics\"]\n",
		"read, bad kind":    "tokens:\n  - token: a\n    scopes: [\"read:bucket:x\"]\n",
		"read, bad index":   "tokens:\n  - token: a\n    scopes: [\"read:index:A\"]\n",
		"read, nothing":     "tokens:\n  - token: a\n    scopes: [\"read:\"]\n",
	}
	for name, yaml := range cases {
		if _, err := server.ParseAuth([]byte(yaml)); !errors.Is(err, server.ErrAuthConfig) {
			t.Errorf("%s: got %v, want ErrAuthConfig", name, err)
		}
	}
	if _, err := server.LoadAuth(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file loaded")
	}
	// Names at the edge of what is possible are accepted.
	good := "tokens:\n  - token: a\n    scopes: [\"index:a234567890123456789012345678901\", \"table:A-b.c_9\", \"list:user:v2\", \"list:" +
		strings.Repeat("x", 256) + "\", \"read:*:*\", \"read:admin\", \"read:table:t\"]\n"
	if _, err := server.ParseAuth([]byte(good)); err != nil {
		t.Errorf("possible names refused: %v", err)
	}
}

// TestLoadAuthRefusesWritableFiles: whoever can write the auth file can
// grant themselves any scope, so a file others may write is refused.
func TestLoadAuthRefusesWritableFiles(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o400, 0o640, 0o644, 0o660, 0o620, 0o602, 0o666} {
		path := filepath.Join(t.TempDir(), "auth.yaml")
		if err := os.WriteFile(path, []byte(authYAML), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := server.LoadAuth(path)
		if writable := mode&0o022 != 0; writable != errors.Is(err, server.ErrAuthConfig) {
			t.Errorf("mode %04o: got %v, refused should be %v", mode, err, writable)
		}
		if err != nil && !strings.Contains(err.Error(), "chmod go-w") {
			t.Errorf("mode %04o: %v does not say how to fix it", mode, err)
		}
	}
}

// TestReadOnlyScopes: a read: scope reaches the GET routes of what it
// names, and nothing else.
func TestReadOnlyScopes(t *testing.T) {
	st := testbackend.Pebble(t, nil)
	ok := func(w http.ResponseWriter, _ *http.Request) error {
		return server.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
	}
	byName := server.ResourceFromPath(server.KindIndex, "name")
	feature := func(s *server.Server) {
		s.Route("GET /v1/indexes/{name}", byName, ok)
		s.Route("PUT /v1/indexes/{name}", byName, ok)
		s.Route("DELETE /v1/indexes/{name}", byName, ok)
		s.Route("GET /v1/indexes", func(*http.Request) server.Resource { return server.Resource{Kind: server.KindIndex} }, ok)
	}
	auth := loadAuth(t, `
tokens:
  - token: reader
    scopes: ["read:index:events"]
  - token: mixed
    scopes: ["read:*:*", "index:own"]
  - token: auditor
    scopes: ["read:admin"]
`)
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, nil), Auth: auth, Features: []server.Feature{feature}})
	cases := []struct {
		token, method, path string
		status              int
	}{
		{"reader", "GET", "/v1/indexes/events", 200},
		{"reader", "PUT", "/v1/indexes/events", 403},
		{"reader", "DELETE", "/v1/indexes/events", 403},
		{"reader", "GET", "/v1/indexes/other", 403},
		{"reader", "GET", "/v1/indexes", 403},
		{"mixed", "GET", "/v1/indexes/other", 200},
		{"mixed", "GET", "/v1/indexes", 200},
		{"mixed", "PUT", "/v1/indexes/other", 403},
		{"mixed", "PUT", "/v1/indexes/own", 200},
		{"mixed", "GET", "/v1/admin/tables", 403},
		{"auditor", "GET", "/v1/admin/tables", 200},
		{"auditor", "GET", "/v1/indexes/events", 200},
		{"auditor", "POST", "/v1/admin/backup", 403},
		{"auditor", "DELETE", "/v1/indexes/events", 403},
	}
	for _, c := range cases {
		var body *strings.Reader
		if c.method != "GET" {
			body = strings.NewReader(`{"to":"x"}`)
		}
		var r response
		if body == nil {
			r = call(t, c.method, ts.URL+c.path, c.token, nil)
		} else {
			r = call(t, c.method, ts.URL+c.path, c.token, body)
		}
		if r.status != c.status {
			t.Errorf("%s %s %s: %d %s, want %d", c.token, c.method, c.path, r.status, r.body, c.status)
		}
	}
	// A write refused to a token that may read the resource says the
	// token is read-only there; one it cannot reach at all, that it has
	// no scope.
	if r := call(t, "PUT", ts.URL+"/v1/indexes/events", "reader", strings.NewReader(`{}`)); !strings.Contains(string(r.body), `the token is read-only for index \"events\"`) {
		t.Errorf("read-only token's write: %d %s, want it said read-only", r.status, r.body)
	}
	if r := call(t, "GET", ts.URL+"/v1/indexes/other", "reader", nil); strings.Contains(string(r.body), "read-only") || !strings.Contains(string(r.body), "has no scope") {
		t.Errorf("read-only token's read of another index: %d %s", r.status, r.body)
	}
}

// authServer serves routes of every kind; each handler counts its calls and
// answers 404 for a resource that does not exist in the store, the way a
// feature handler would.
func authServer(t *testing.T) (url string, calls *atomic.Int32) {
	t.Helper()
	st := testbackend.Pebble(t, nil)
	ctx := context.Background()
	if err := st.CreateTable(ctx, store.TableSpec{
		Name:         "tenant_a",
		PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}},
		Values:       []store.Column{{Name: "v", Type: store.TypeBytes}},
	}); err != nil {
		t.Fatal(err)
	}
	calls = new(atomic.Int32)
	exists := func(w http.ResponseWriter, r *http.Request) error {
		calls.Add(1)
		infos, err := st.Tables(r.Context(), r.PathValue("name"))
		if err != nil {
			return err
		}
		if len(infos) == 0 || infos[0].Spec.Name != r.PathValue("name") {
			return store.ErrTableNotFound
		}
		return server.WriteJSON(w, http.StatusOK, map[string]string{"name": r.PathValue("name")})
	}
	ok := func(w http.ResponseWriter, _ *http.Request) error {
		calls.Add(1)
		return server.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
	}
	feature := func(s *server.Server) {
		s.Route("GET /v1/tables/{name}", server.ResourceFromPath(server.KindTable, "name"), exists)
		s.Route("GET /v1/indexes/{name}", server.ResourceFromPath(server.KindIndex, "name"), ok)
		s.Route("GET /v1/indexes", func(*http.Request) server.Resource { return server.Resource{Kind: server.KindIndex} }, ok)
		s.Route("GET /v1/lists/{entity_type}/{feature}", server.ResourceFromPath(server.KindList, "entity_type"), ok)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, nil), Auth: loadAuth(t, authYAML), Features: []server.Feature{feature}})
	return ts.URL, calls
}

func TestAuthScopes(t *testing.T) {
	url, _ := authServer(t)
	cases := []struct {
		token, path string
		status      int
	}{
		// 401: no token, an unknown one, a malformed header.
		{"", "/v1/indexes/events", 401},
		{"nope", "/v1/indexes/events", 401},
		{"", "/v1/admin/tables", 401},
		{"", "/v1/no/such/route", 401},
		// admin reaches everything.
		{"root-token", "/v1/admin/tables", 200},
		{"root-token", "/v1/indexes/events", 200},
		{"root-token", "/v1/indexes", 200},
		{"root-token", "/v1/tables/tenant_a", 200},
		{"root-token", "/v1/tables/tenant_b", 404},
		// *:* reaches everything but admin.
		{"all-token", "/v1/admin/tables", 403},
		{"all-token", "/v1/indexes/anything", 200},
		{"all-token", "/v1/indexes", 200},
		{"all-token", "/v1/lists/user/clicks", 200},
		{"all-token", "/v1/tables/tenant_a", 200},
		// Named scopes reach their own resource only, and no collection.
		{"events-token", "/v1/indexes/events", 200},
		{"events-token", "/v1/indexes/other", 403},
		{"events-token", "/v1/indexes", 403},
		{"events-token", "/v1/lists/user:v2/clicks", 200},
		{"events-token", "/v1/lists/user/clicks", 403},
		{"events-token", "/v1/admin/tables", 403},
		{"events-token", "/v1/tables/tenant_a", 403},
		{"tenant-token", "/v1/tables/tenant_a", 200},
		{"tenant-token", "/v1/indexes/tenant_a", 403},
		// A valid token on an unknown route learns only that it is unknown.
		{"events-token", "/v1/no/such/route", 404},
	}
	for _, c := range cases {
		r := call(t, "GET", url+c.path, c.token, nil)
		if r.status != c.status {
			t.Errorf("%s %s: got %d %s, want %d", c.token, c.path, r.status, r.body, c.status)
			continue
		}
		switch c.status {
		case 401:
			if r.errorCode(t) != server.CodeUnauthenticated || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: 401 %s without the right code or challenge", c.token, c.path, r.body)
			}
		case 403:
			if r.errorCode(t) != server.CodePermissionDenied {
				t.Errorf("%s %s: 403 with %s", c.token, c.path, r.body)
			}
		}
	}
	// Health and metrics need no token: probes carry none.
	if r := call(t, "GET", url+"/healthz", "", nil); r.status != 200 {
		t.Errorf("healthz with auth: %d", r.status)
	}
}

// TestForbiddenRevealsNothing checks that a 403 is decided before the
// handler runs and is byte-for-byte the same for a resource that exists and
// one that does not.
func TestForbiddenRevealsNothing(t *testing.T) {
	url, calls := authServer(t)
	before := calls.Load()
	// tenant_a exists, tenant_b does not; events-token may see neither.
	a := call(t, "GET", url+"/v1/tables/tenant_a", "events-token", nil)
	b := call(t, "GET", url+"/v1/tables/tenant_b", "events-token", nil)
	if a.status != 403 || b.status != 403 {
		t.Fatalf("statuses %d, %d", a.status, b.status)
	}
	if calls.Load() != before {
		t.Fatal("the handler ran for a forbidden request")
	}
	// The messages name the requested resource, which the caller chose;
	// with the name swapped they must be identical.
	if !bytes.Equal(a.body, bytes.ReplaceAll(b.body, []byte("tenant_b"), []byte("tenant_a"))) {
		t.Fatalf("403 bodies differ:\n%s\n%s", a.body, b.body)
	}
	for _, h := range []string{"Content-Type", "Content-Length"} {
		if a.header.Get(h) != b.header.Get(h) {
			t.Fatalf("403 %s differs: %q vs %q", h, a.header.Get(h), b.header.Get(h))
		}
	}
	// With the right token the difference shows, as it should.
	if r := call(t, "GET", url+"/v1/tables/tenant_b", "root-token", nil); r.status != 404 {
		t.Fatalf("admin on a missing table: %d", r.status)
	}
}

func TestAuthHeaderForms(t *testing.T) {
	url, _ := authServer(t)
	cases := []struct {
		header string
		status int
	}{
		{"Bearer root-token", 200},
		{"bearer root-token", 200}, // the scheme is case-insensitive (RFC 7235)
		{"Basic cm9vdC10b2tlbg==", 401},
		{"Bearer", 401},
		{"Bearer ", 401},
		{"root-token", 401},
		{"Bearer root-token-but-longer", 401},
		{"Bearer root-toke", 401},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("GET", url+"/v1/admin/tables", nil)
		req.Header.Set("Authorization", c.header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%q: got %d, want %d", c.header, resp.StatusCode, c.status)
		}
	}
}

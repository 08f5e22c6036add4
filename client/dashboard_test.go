package client_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDashboardFiles checks the dashboard's routes against the spec: the
// root redirects to /ui/, whose files are served without a token from a
// server with an auth file (they hold no data), under a policy that keeps
// the page on this server, and unknown files are 404 like any unknown path.
// The page itself is tested in a browser in server/ui.
func TestDashboardFiles(t *testing.T) {
	e := newEnv(t)
	hc := &http.Client{
		Transport:     e.rec,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(path string, header http.Header) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}

	for _, path := range []string{"/", "/ui"} {
		if resp, _ := get(path, nil); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
			t.Fatalf("GET %s: %d, Location %q; want 302 to /ui/", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, c := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html", `<script src="app.js"`},
		{"/ui/index.html", "text/html", "Sign in"},
		{"/ui/app.js", "text/javascript", "/v1/indexes"},
		{"/ui/style.css", "text/css", ".shard"},
	} {
		resp, body := get(c.path, nil)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(body, c.contains) {
			t.Errorf("GET %s: %d %q, want 200 %s containing %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.ctype, c.contains)
			continue
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
		etag := resp.Header.Get("ETag")
		if again, _ := get(c.path, http.Header{"If-None-Match": {etag}}); etag == "" || again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %q: %d, want 304", c.path, etag, again.StatusCode)
		}
	}
	for _, path := range []string{"/ui/nope.js", "/ui/static/app.js", "/nope", "/v1"} {
		resp, _ := get(path, nil)
		want := http.StatusNotFound
		if path == "/v1" {
			want = http.StatusUnauthorized // under /v1 a token comes first
		}
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	// The page holds no data: the API behind it still wants a token.
	if resp, _ := get("/v1/indexes", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/indexes without a token: %d, want 401", resp.StatusCode)
	}
}

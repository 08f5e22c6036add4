package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/server"
)

// TestDotSegmentsNeverRedirect is the data-loss case of a client that
// escapes keys with url.PathEscape (which leaves dots alone): the router
// used to redirect DELETE /v1/tables/victim/items/.. to DELETE
// /v1/tables/victim, and a client following it deleted the table.
func TestDotSegmentsNeverRedirect(t *testing.T) {
	srv := startTables(t, nil)
	put := func(path, body string) {
		t.Helper()
		if r := call(t, "PUT", srv.url+path, "", strings.NewReader(body)); r.status/100 != 2 {
			t.Fatalf("PUT %s: %d %s", path, r.status, r.body)
		}
	}
	put("/v1/tables/victim", `{"default_ttl":"0s"}`)
	put("/v1/tables/victim/items/k", `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"a":1}}`)
	for _, method := range []string{"DELETE", "PUT", "POST", "GET"} {
		for _, path := range []string{
			"/v1/tables/victim/items/..", "/v1/tables/victim/items/.", "/v1/tables/victim/./items/k",
			"/v1/tables/x/../victim", "/v1/tables//victim", "/x/../v1/tables/victim",
		} {
			r := call(t, method, srv.url+path, "", strings.NewReader(`{}`))
			if r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_argument" {
				t.Fatalf("%s %s: %d %s, want 400 invalid_argument", method, path, r.status, r.body)
			}
		}
	}
	// Escaped, dots are an ordinary key.
	if r := call(t, "DELETE", srv.url+"/v1/tables/victim/items/%2E%2E", "", nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE of the key \"..\": %d %s", r.status, r.body)
	}
	if r := call(t, "GET", srv.url+"/v1/tables/victim/items/k", "", nil); r.status != 200 {
		t.Fatalf("the table lost its item: %d %s", r.status, r.body)
	}
}

// TestClientHangUpIsNotAServerError checks that a request whose client
// went away is counted as 499, not as a 503 that would fire 5xx alerts.
func TestClientHangUpIsNotAServerError(t *testing.T) {
	reg := prometheus.NewRegistry()
	started := make(chan struct{})
	feature := func(s *server.Server) {
		s.Route("GET /v1/slow", server.AdminResource, func(_ http.ResponseWriter, r *http.Request) error {
			close(started)
			<-r.Context().Done()
			return fmt.Errorf("slow: %w", r.Context().Err())
		})
	}
	ts, _ := start(t, server.Options{Registerer: reg, Features: []server.Feature{feature}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/slow", nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for {
		body := string(call(t, "GET", ts.URL+"/metrics", "", nil).body)
		if strings.Contains(body, `ebb_http_requests_total{code="499",route="GET /v1/slow"} 1`) {
			if strings.Contains(body, `code="503"`) {
				t.Fatalf("a hang-up was counted as 503:\n%s", body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 499 counted for the hang-up:\n%s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

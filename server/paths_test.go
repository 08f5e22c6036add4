package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
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
// went away is counted as 499, not as a 503 that would fire 5xx alerts,
// on either listener (the hot one notices once a request without a body
// has run for its watch delay: hothangup.go).
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

// blockingFeature serves POST /v1/block, which signals entered and then
// waits for hold to close, and GET /v1/quick, which answers at once: writes
// that hold their admission slots, and reads that take a slot of their own
// for no time.
func blockingFeature(entered chan<- struct{}, hold <-chan struct{}) server.Feature {
	return func(s *server.Server) {
		s.Route("POST /v1/block", server.AdminResource, func(w http.ResponseWriter, r *http.Request) error {
			entered <- struct{}{}
			<-hold
			return server.WriteJSON(w, 200, map[string]int{})
		})
		s.Route("GET /v1/quick", server.AdminResource, func(w http.ResponseWriter, r *http.Request) error {
			return server.WriteJSON(w, 200, map[string]int{})
		})
	}
}

// TestOverloadIsShed fills the write slots with requests that block, and
// checks that the next write is refused at once with 503 and Retry-After,
// while reads and /healthz are still answered.
func TestOverloadIsShed(t *testing.T) {
	reg := prometheus.NewRegistry()
	hold := make(chan struct{})
	entered := make(chan struct{}, 4)
	ts, _ := start(t, server.Options{Registerer: reg, Features: []server.Feature{blockingFeature(entered, hold)}, Limits: server.Limits{Writes: 2, Queue: 20 * time.Millisecond}})
	done := make(chan struct{})
	for range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			call(t, "POST", ts.URL+"/v1/block", "", nil)
		}()
	}
	<-entered
	<-entered
	began := time.Now()
	// Without admission the third write would block on hold too: wait for
	// it with a deadline, so that the test fails instead of hanging.
	third := make(chan response, 1)
	go func() { third <- call(t, "POST", ts.URL+"/v1/block", "", nil) }()
	var r response
	select {
	case r = <-third:
	case <-time.After(5 * time.Second):
		close(hold)
		t.Fatal("a third write while two are in flight was not shed within 5s: it was admitted and queued")
	}
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || r.errorCode(t) != "unavailable" {
		t.Fatalf("third write while two are in flight: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("shedding took %v", took)
	}
	if r := call(t, "GET", ts.URL+"/v1/quick", "", nil); r.status != 200 {
		t.Fatalf("a read while writes are full: %d", r.status)
	}
	if r := call(t, "GET", ts.URL+"/healthz", "", nil); r.status != 200 {
		t.Fatalf("healthz while writes are full: %d", r.status)
	}
	close(hold)
	<-done
	<-done
	if body := string(call(t, "GET", ts.URL+"/metrics", "", nil).body); !strings.Contains(body, `ebb_http_shed_total{class="write",reason="limit"} 1`) {
		t.Fatalf("shed not counted:\n%s", body)
	}
}

// TestMetricsNeedATokenWithAuth: series name indexes and tables, so with
// an auth file /metrics needs the metrics (or admin) scope.
func TestMetricsNeedATokenWithAuth(t *testing.T) {
	reg := prometheus.NewRegistry()
	auth := loadAuth(t, "tokens:\n  - token: scrape\n    scopes: [metrics]\n  - token: ev\n    scopes: [\"index:events\"]\n  - token: root\n    scopes: [admin]\n")
	ts, _ := start(t, server.Options{Registerer: reg, Auth: auth, Admin: adminFor(t, testbackend.Pebble(t, nil), nil)})
	for tok, want := range map[string]int{"": 401, "ev": 403, "scrape": 200, "root": 200} {
		if r := call(t, "GET", ts.URL+"/metrics", tok, nil); r.status != want {
			t.Errorf("/metrics with token %q: %d, want %d", tok, r.status, want)
		}
	}
	// The metrics scope reaches nothing else.
	if r := call(t, "GET", ts.URL+"/v1/admin/tables", "scrape", nil); r.status != 403 {
		t.Errorf("/v1/admin/tables with the metrics token: %d, want 403", r.status)
	}
	if r := call(t, "GET", ts.URL+"/healthz", "", nil); r.status != 200 {
		t.Errorf("/healthz without a token: %d", r.status)
	}
}

// TestStrictJSON: keys given twice, and struct fields in another case,
// are refused rather than resolved silently (encoding/json takes the last
// duplicate and matches names case-insensitively).
func TestStrictJSON(t *testing.T) {
	srv := startTables(t, nil)
	for _, body := range []string{
		`{"default_ttl":"0s","default_ttl":"1h"}`,
		`{"Default_TTL":"1h"}`,
	} {
		r := call(t, "PUT", srv.url+"/v1/tables/strict", "", strings.NewReader(body))
		if r.status != 400 || r.errorCode(t) != "invalid_argument" {
			t.Fatalf("PUT table %s: %d %s", body, r.status, r.body)
		}
	}
	if r := call(t, "PUT", srv.url+"/v1/tables/strict", "", strings.NewReader(`{"default_ttl":"0s"}`)); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	// Inside free-form attributes too: which "a" would a reader see?
	r := call(t, "PUT", srv.url+"/v1/tables/strict/items/k", "", strings.NewReader(`{"timestamp":"2026-03-01T12:00:00Z","attributes":{"a":1,"b":{"c":1,"c":2}}}`))
	if r.status != 400 || !strings.Contains(string(r.body), "twice") {
		t.Fatalf("duplicate nested attribute: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", srv.url+"/v1/tables/strict/items/k", "", nil); r.status != 404 {
		t.Fatalf("the refused put wrote: %d %s", r.status, r.body)
	}
}

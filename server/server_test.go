package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// TestMain checks that no test leaves a goroutine behind, but for two of
// fasthttp's (the hot listener's server): the process-wide clock that
// refreshes its Date header every second, started once and never
// stopped, and a stopped server's idle-worker cleaner, which returns at
// its next wake-up, up to 10 s later. With EBB_TEST_LISTENER=both (make
// check) the tests run twice in the one process, as listeners describes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(listeners{m},
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"))
}

// listeners runs the package's tests on the listener testListenerVar
// names: "hot" the hot listener, "both" net/http and then the hot
// listener, in one process (one build and link of the race-instrumented
// binary, and one test process that `go test ./...` schedules beside the
// other packages instead of after them), anything else net/http. With
// "both", the second pass runs only the tests that asked which listener
// to serve on (onHot): the others serve on both listeners themselves, or
// on none, and would only repeat the first pass's work.
type listeners struct{ m *testing.M }

func (l listeners) Run() int {
	if os.Getenv(testListenerVar) != "both" {
		return l.m.Run()
	}
	code := 0
	for _, listener := range []string{"main", "hot"} {
		if err := os.Setenv(testListenerVar, listener); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if listener == "hot" {
			if err := runListenerTests(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		fmt.Printf("server tests on the %s listener (%s=%s, -test.run %q)\n", listener, testListenerVar, listener, flag.Lookup("test.run").Value)
		if c := l.m.Run(); c != 0 {
			code = c
		}
	}
	return code
}

// adminFor serves the admin routes from st through an ebb.DB without
// background roles, on the test's clock (nil: time.Now). The DB takes st
// over; the test's cleanup closes both.
func adminFor(t *testing.T, st store.Store, now func() time.Time) server.Admin {
	t.Helper()
	db, err := ebb.Open(t.Context(), ebb.Options{Store: st, Now: now, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// testListenerVar names the variable that runs the package's tests over
// the hot listener.
const testListenerVar = "EBB_TEST_LISTENER"

// listenerTests holds the top-level tests that asked onHot which listener
// to serve on.
var listenerTests struct {
	sync.Mutex
	names map[string]bool
}

// onHot reports whether t serves on the hot listener (testListenerVar is
// "hot"), and records that t's outcome depends on the listener, so that
// listeners runs it on both.
func onHot(t testing.TB) bool {
	name, _, _ := strings.Cut(t.Name(), "/")
	listenerTests.Lock()
	if listenerTests.names == nil {
		listenerTests.names = map[string]bool{}
	}
	listenerTests.names[name] = true
	listenerTests.Unlock()
	return os.Getenv(testListenerVar) == "hot"
}

// runListenerTests narrows -test.run to the tests onHot recorded, unless
// the run was given a -test.run of its own, which then holds for both
// passes.
func runListenerTests() error {
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" {
		return nil
	}
	listenerTests.Lock()
	names := slices.Sorted(maps.Keys(listenerTests.names))
	listenerTests.Unlock()
	for i, n := range names {
		names[i] = regexp.QuoteMeta(n)
	}
	pattern := "^$"
	if len(names) > 0 {
		pattern = "^(" + strings.Join(names, "|") + ")$"
	}
	return flag.Set("test.run", pattern)
}

// newServer builds a Server with opts, its Logger discarding unless set.
func newServer(t *testing.T, opts server.Options) (*server.Server, server.Options) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, opts
}

// start builds a Server over a fresh store with opts and serves it: over
// net/http, or, with EBB_TEST_LISTENER=hot (make check runs the package
// both ways, with EBB_TEST_LISTENER=both), over the hot listener, whose URL then replaces the
// httptest server's.
func start(t *testing.T, opts server.Options) (*httptest.Server, server.Options) {
	t.Helper()
	s, opts := newServer(t, opts)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	if onHot(t) {
		ts.URL = server.ServeHot(t, s)
	}
	return ts, opts
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// errorCode decodes the API error body, failing the test when the body is
// not one.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	var b struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.Error.Code == "" || b.Error.Message == "" {
		t.Fatalf("status %d: body %q is not an API error (%v)", r.status, r.body, err)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	return b.Error.Code
}

func call(t *testing.T, method, url, token string, body io.Reader, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range headers { // "Name: value"
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func TestHealthzAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts, _ := start(t, server.Options{Registerer: reg})
	r := call(t, "GET", ts.URL+"/healthz", "", nil)
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %q", r.status, r.body)
	}
	call(t, "GET", ts.URL+"/v1/no/such/route", "", nil)
	m := call(t, "GET", ts.URL+"/metrics", "", nil)
	if m.status != 200 {
		t.Fatalf("metrics: %d", m.status)
	}
	for _, want := range []string{
		`ebb_http_requests_total{code="200",route="GET /healthz"} 1`,
		`ebb_http_requests_total{code="404",route="unmatched"} 1`,
		`ebb_http_request_duration_seconds_bucket{code="200",route="GET /healthz",le=`,
	} {
		if !bytes.Contains(m.body, []byte(want)) {
			t.Errorf("metrics lack %s:\n%s", want, m.body)
		}
	}
}

func TestMetricsWithoutGathererNotServed(t *testing.T) {
	ts, _ := start(t, server.Options{})
	if r := call(t, "GET", ts.URL+"/metrics", "", nil); r.status != 404 {
		t.Fatalf("metrics without a gatherer: %d", r.status)
	}
}

func TestNew(t *testing.T) {
	st := testbackend.Pebble(t, nil)
	reg := prometheus.NewRegistry()
	if _, err := server.New(server.Options{Admin: adminFor(t, st, nil), Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	// Two servers on one registry would export clashing series.
	if _, err := server.New(server.Options{Admin: adminFor(t, st, nil), Registerer: reg}); err == nil {
		t.Fatal("second New on the same registry succeeded")
	}
	// A wiring mistake is an error from New, not a crash, and leaves the
	// registry as it was.
	reg2 := prometheus.NewRegistry()
	dup := func(s *server.Server) {
		s.Route("GET /v1/admin/tables", server.AdminResource, func(http.ResponseWriter, *http.Request) error { return nil })
	}
	if _, err := server.New(server.Options{Admin: adminFor(t, st, nil), Registerer: reg2, Features: []server.Feature{dup}}); err == nil ||
		!strings.Contains(err.Error(), "feature 0") {
		t.Fatalf("duplicate route: %v", err)
	}
	if _, err := server.New(server.Options{Admin: adminFor(t, st, nil), Registerer: reg2}); err != nil {
		t.Fatalf("registry not left clean by a failed New: %v", err)
	}
}

func TestUnmatchedRoutes(t *testing.T) {
	ts, _ := start(t, server.Options{Admin: adminFor(t, testbackend.Pebble(t, nil), nil)})
	r := call(t, "GET", ts.URL+"/v1/nothing/here", "", nil)
	if r.status != 404 || r.errorCode(t) != server.CodeNotFound {
		t.Fatalf("unknown route: %d %s", r.status, r.body)
	}
	r = call(t, "DELETE", ts.URL+"/v1/admin/tables", "", nil)
	if r.status != 405 || r.errorCode(t) != server.CodeMethodNotAllowed {
		t.Fatalf("wrong method: %d %s", r.status, r.body)
	}
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("405 Allow header %q", allow)
	}
}

// TestErrorMapping checks that each error a handler returns is answered
// with the status and code of API.md "Conventions".
func TestErrorMapping(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("bad name: %w", store.ErrInvalid), 400, "invalid_argument"},
		{&store.MutationError{Index: 3, Err: fmt.Errorf("%w: empty key", store.ErrInvalid)}, 400, "invalid_argument"},
		{store.ErrNotFound, 404, "not_found"},
		{fmt.Errorf("x: %w", store.ErrTableNotFound), 404, "not_found"},
		{store.ErrConflict, 409, "conflict"},
		{store.ErrTableExists, 409, "conflict"},
		{store.ErrCapacityLimit, 409, "conflict"},
		{timeseries.ErrExpired, 422, "expired"},
		{fmt.Errorf("w: %w", timeseries.ErrNoShard), 422, "no_shard"},
		{store.ErrTooLarge, 413, "too_large"},
		{store.ErrThrottled, 503, "unavailable"},
		{store.ErrUnavailable, 503, "unavailable"},
		{store.ErrClosed, 503, "unavailable"},
		{server.Errorf(418, "teapot", "short and stout"), 418, "teapot"},
		{server.Errorf(http.StatusBadRequest, server.CodeInvalidArgument, "wrapped: %w", store.ErrNotFound), 400, "invalid_argument"},
		{errors.New("disk on fire at /secret/path"), 500, "internal"},
	}
	feature := func(s *server.Server) {
		// The index feature maps its own sentinels; its routes are not
		// called here.
		server.Indexes(nil)(s)
		for i, c := range cases {
			s.Route(fmt.Sprintf("GET /v1/case/%d", i), server.AdminResource, func(http.ResponseWriter, *http.Request) error {
				return c.err
			})
		}
	}
	ts, _ := start(t, server.Options{Features: []server.Feature{feature}})
	for i, c := range cases {
		r := call(t, "GET", fmt.Sprintf("%s/v1/case/%d", ts.URL, i), "", nil)
		if r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%v: got %d %s, want %d %s", c.err, r.status, r.body, c.status, c.code)
		}
		if c.status == 500 && bytes.Contains(r.body, []byte("secret")) {
			t.Errorf("internal error leaked its detail: %s", r.body)
		}
	}
}

func TestErrorIsStoreSentinel(t *testing.T) {
	if err := server.Errorf(400, server.CodeInvalidArgument, "x"); !errors.Is(err, store.ErrInvalid) {
		t.Error("invalid_argument error is not store.ErrInvalid")
	}
	if err := server.Errorf(409, server.CodeConflict, "x"); errors.Is(err, store.ErrInvalid) {
		t.Error("conflict error is store.ErrInvalid")
	}
	base := errors.New("base")
	if err := server.Errorf(500, server.CodeInternal, "ctx: %w", base); !errors.Is(err, base) {
		t.Error("%w not reachable through Errorf")
	}
}

func TestPanicIsRecovered(t *testing.T) {
	var calls atomic.Int32
	feature := func(s *server.Server) {
		s.Route("GET /v1/boom", server.AdminResource, func(http.ResponseWriter, *http.Request) error {
			calls.Add(1)
			panic("boom")
		})
	}
	ts, _ := start(t, server.Options{Features: []server.Feature{feature}})
	for range 2 {
		r := call(t, "GET", ts.URL+"/v1/boom", "", nil)
		if r.status != 500 || r.errorCode(t) != server.CodeInternal {
			t.Fatalf("panic: %d %s", r.status, r.body)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("handler ran %d times", calls.Load())
	}
	if r := call(t, "GET", ts.URL+"/healthz", "", nil); r.status != 200 {
		t.Fatalf("server unhealthy after a panic: %d", r.status)
	}
}

// TestErrorAfterWrite checks that a handler failing after it has answered
// is not answered twice.
func TestErrorAfterWrite(t *testing.T) {
	feature := func(s *server.Server) {
		s.Route("GET /v1/late", server.AdminResource, func(w http.ResponseWriter, _ *http.Request) error {
			if err := server.WriteJSON(w, http.StatusAccepted, map[string]int{"n": 1}); err != nil {
				return err
			}
			return store.ErrUnavailable
		})
	}
	ts, _ := start(t, server.Options{Features: []server.Feature{feature}})
	r := call(t, "GET", ts.URL+"/v1/late", "", nil)
	if r.status != http.StatusAccepted || strings.TrimSpace(string(r.body)) != `{"n":1}` {
		t.Fatalf("got %d %q", r.status, r.body)
	}
}

func TestServerAccessors(t *testing.T) {
	called := false
	feature := func(s *server.Server) {
		called = true
		if s.Logger() == nil || s.Now().IsZero() {
			t.Error("nil logger or zero clock")
		}
	}
	start(t, server.Options{Features: []server.Feature{feature}})
	if !called {
		t.Fatal("Feature not installed")
	}
}

// TestErrorMessagesInUserTerms: messages carry neither Go package names
// nor the sentinel texts their code already says, and JSON keeps "<" and
// ">" as they are.
func TestErrorMessagesInUserTerms(t *testing.T) {
	st := testbackend.Pebble(t, nil)
	db, err := ebb.Open(t.Context(), ebb.Options{Store: st, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := server.New(server.Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	body := func(method, path, in string) string {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(in))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	body("PUT", "/v1/indexes/ev", `{"table_bucket":"1h","partition_bucket":"10m","retention":"24h"}`)
	for _, c := range []struct{ method, path, in, want string }{
		{"GET", "/v1/indexes/nope", "", `"message":"index \"nope\" not found"`},
		{"POST", "/v1/indexes/ev/events", `{"events":[{"index_id":"a","event_id":"e","timestamp":"2001-01-01T00:00:00Z","payload":"eA=="}]}`,
			`"message":"event 0: already expired: timestamp 2001-01-01T00:00:00Z + retention 24h <= now `},
		{"PUT", "/v1/indexes/ev", `{"table_bucket":"90m","partition_bucket":"10m","retention":"24h"}`,
			`"message":"invalid layout change: index \"ev\": table_bucket 1h cannot become 1h30m: one must be a multiple of the other`},
	} {
		got := body(c.method, c.path, c.in)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %s: %s, want it to contain %s", c.method, c.path, got, c.want)
		}
		for _, leak := range []string{"timeseries:", "store:", "multitable:", `\u003c`, "0m0s"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s %s: %s leaks %q", c.method, c.path, got, leak)
			}
		}
	}
}

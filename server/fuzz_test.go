package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testbackend"
)

// The fuzz targets below send every request decoder of the API (paths with
// escaped segments, query strings, each route's JSON body, page tokens and
// the Authorization header) arbitrary input, through the whole Server over
// a real store. The invariant: no panic, no 500, and every answer is a
// status docs/openapi.yaml declares for the route (or for unmatched
// paths), with an error body whose code the spec lists. `make test` runs
// each for a few seconds from testdata/fuzz; `make fuzz` runs them longer.

const fuzzToken = "fuzz-root"

// fuzzServer is a Server over an ebb.DB on an in-memory Pebble store, with
// an auth file, an index, a list feature and a shared table to aim at.
type fuzzServer struct {
	h      http.Handler
	s      *Server
	spec   fuzzSpec
	events string // a page token of GET .../events
	items  string // a page token of GET .../items (lists)
	rows   string // a page token of GET /v1/tables/t/items
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	db, err := ebb.Open(context.Background(), ebb.Options{Store: testbackend.Pebble(f, nil), NoBackground: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = db.Close() })
	auth, err := ParseAuth([]byte("tokens:\n  - token: " + fuzzToken + "\n    scopes: [admin]\n  - token: reader\n    scopes: [\"read:index:ev\"]\n"))
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Options{DB: db, Auth: auth, Registerer: prometheus.NewRegistry()})
	if err != nil {
		f.Fatal(err)
	}
	fs := &fuzzServer{h: s.Handler(), s: s, spec: loadFuzzSpec(f)}
	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/indexes/ev", `{"table_bucket":"1h","partition_bucket":"10m","retention":"24h"}`},
		{"POST", "/v1/indexes/ev/events", `{"events":[{"index_id":"a","event_id":"1","timestamp":"` + ts(-time.Minute) + `","payload":"eA=="},` +
			`{"index_id":"a","event_id":"2","timestamp":"` + ts(-time.Second) + `"}]}`},
		{"PUT", "/v1/list-features/user/f/_", `{"ttl":"720h"}`},
		{"POST", "/v1/lists/user/f/_/u1/items", `{"items":[{"value":"eA==","timestamp":"` + ts(-time.Minute) + `"},{"value":"eQ==","timestamp":"` + ts(-time.Second) + `"}]}`},
		{"PUT", "/v1/tables/t", `{"default_ttl":"0s"}`},
		{"PUT", "/v1/tables/t/items/k1", `{"timestamp":"` + ts(-time.Minute) + `","attributes":{"a":1}}`},
		{"PUT", "/v1/tables/t/items/k2", `{"timestamp":"` + ts(-time.Second) + `","attributes":null,"ttl":"1h"}`},
	} {
		if w := fs.do(c.method, c.path, c.body, fuzzToken); w.Code/100 != 2 {
			f.Fatalf("%s %s: %d %s", c.method, c.path, w.Code, w.Body)
		}
	}
	token := func(path string) string {
		w := fs.do("GET", path, "", fuzzToken)
		var p struct {
			Next string `json:"next_page_token"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Next == "" {
			f.Fatalf("GET %s: %d %s: no page token", path, w.Code, w.Body)
		}
		return p.Next
	}
	fs.events = token("/v1/indexes/ev/events?index_id=a&limit=1")
	fs.items = token("/v1/lists/user/f/_/u1/items?limit=1")
	fs.rows = token("/v1/tables/t/items?limit=1")
	return fs
}

// do serves one request in process.
func (fs *fuzzServer) do(method, target, body, token string) *httptest.ResponseRecorder {
	u, err := url.ParseRequestURI(target)
	if err != nil {
		panic(err)
	}
	return fs.serve(method, u, body, token)
}

func (fs *fuzzServer) serve(method string, u *url.URL, body, token string) *httptest.ResponseRecorder {
	r := &http.Request{Method: method, URL: u, RequestURI: u.RequestURI(), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Host: "ebb.test", RemoteAddr: "127.0.0.1:1"}
	r = r.WithContext(context.Background())
	if body != "" {
		r.Body = readCloser{strings.NewReader(body)}
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		r.Header.Set("Authorization", token)
		if !strings.Contains(token, " ") {
			r.Header.Set("Authorization", "Bearer "+token)
		}
	}
	w := httptest.NewRecorder()
	fs.h.ServeHTTP(w, r)
	return w
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// check holds an answer to the invariant.
func (fs *fuzzServer) check(t *testing.T, method string, u *url.URL, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code == http.StatusInternalServerError {
		t.Fatalf("%s %s: 500 %s", method, u, w.Body)
	}
	r := &http.Request{Method: method, URL: u, Host: "ebb.test"}
	pattern := ""
	if cleanPath(u.EscapedPath()) {
		_, pattern = fs.s.mux.Handler(r)
	}
	declared := fs.spec.statuses(pattern)
	if !slices.Contains(declared, w.Code) {
		t.Fatalf("%s %s (route %q): status %d, declared %v; body %s", method, u, pattern, w.Code, declared, w.Body)
	}
	if w.Code >= 400 {
		var b struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil || b.Error.Message == "" || !slices.Contains(fs.spec.codes, b.Error.Code) {
			t.Fatalf("%s %s: status %d with body %q, not an error the spec lists", method, u, w.Code, w.Body)
		}
	}
}

// fuzzSpec is what docs/openapi.yaml declares: each operation's statuses,
// the statuses of unmatched paths, and the error codes.
type fuzzSpec struct {
	ops       map[string][]int // "GET /v1/indexes/{name}" -> statuses
	unmatched []int
	codes     []string
}

func (s fuzzSpec) statuses(pattern string) []int {
	if pattern == "" {
		// A path the server refuses before routing (dot segments) is a
		// 400 on any route; otherwise the router's own answers.
		return append([]int{http.StatusBadRequest}, s.unmatched...)
	}
	method, path, _ := strings.Cut(pattern, " ")
	return s.ops[method+" "+strings.TrimSuffix(path, "{$}")]
}

func loadFuzzSpec(f *testing.F) fuzzSpec {
	f.Helper()
	data, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Unmatched  map[string]yaml.Node            `yaml:"x-unmatched-responses"`
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `yaml:"enum"`
				} `yaml:"ErrorCode"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		f.Fatal(err)
	}
	keys := func(m map[string]yaml.Node) []int {
		var out []int
		for k := range m {
			if n, err := strconv.Atoi(k); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	s := fuzzSpec{ops: map[string][]int{}, unmatched: keys(doc.Unmatched), codes: doc.Components.Schemas.ErrorCode.Enum}
	for path, item := range doc.Paths {
		for method, node := range item {
			var op struct {
				Responses map[string]yaml.Node `yaml:"responses"`
			}
			if node.Decode(&op) == nil && op.Responses != nil {
				s.ops[strings.ToUpper(method)+" "+path] = keys(op.Responses)
			}
		}
	}
	if len(s.ops) == 0 || len(s.codes) == 0 {
		f.Fatal("docs/openapi.yaml: no operations or error codes found")
	}
	return s
}

// fuzzMethods are the methods the targets pick from by index.
var fuzzMethods = []string{"GET", "PUT", "POST", "DELETE", "PATCH", "HEAD"}

// FuzzPath sends any method and any path, escaped segments and all.
func FuzzPath(f *testing.F) {
	fs := newFuzzServer(f)
	f.Add(uint8(0), "/v1/tables/t/items/k1")
	f.Add(uint8(3), "/v1/tables/t/items/..")
	f.Add(uint8(3), "/v1/tables/t/items/%2E%2E")
	f.Add(uint8(0), "/v1/lists/user/f/_/u%2F1%23x/items")
	f.Add(uint8(0), "/v1/indexes/ev/events?index_id=a")
	f.Fuzz(func(t *testing.T, m uint8, target string) {
		method := fuzzMethods[int(m)%len(fuzzMethods)]
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(target, "/") {
			return // net/http refuses it before any handler
		}
		fs.check(t, method, u, fs.serve(method, u, "", fuzzToken))
	})
}

// fuzzQueryRoutes are the routes that take query parameters.
var fuzzQueryRoutes = []struct{ method, path string }{
	{"GET", "/v1/indexes/ev/events"},
	{"GET", "/v1/indexes/ev"},
	{"POST", "/v1/indexes/ev/reconcile"},
	{"GET", "/v1/lists/user/f/_/u1/items"},
	{"DELETE", "/v1/lists/user/f/_/u2/items"},
	{"GET", "/v1/tables/t/items"},
	{"GET", "/v1/tables/t"},
}

// FuzzQuery sends any query string to each route that takes one.
func FuzzQuery(f *testing.F) {
	fs := newFuzzServer(f)
	f.Add(uint8(0), "index_id=a&from=2026-03-01T12:00:00%2B01:00&to=2026-03-01T12:00:00+01:00&order=desc&limit=10")
	f.Add(uint8(1), "stats=true")
	f.Add(uint8(2), "dry_run=true&allow_clock_jump=maybe")
	f.Add(uint8(3), "min_timestamp=2026-03-01T12:00:00Z&limit=0")
	f.Add(uint8(4), "value=eA%3D%3D")
	f.Add(uint8(5), "after=2026-03-01T12:00:00.123Z&limit=10001&limt=1")
	f.Add(uint8(6), "x=%zz")
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		rt := fuzzQueryRoutes[int(route)%len(fuzzQueryRoutes)]
		u := &url.URL{Path: rt.path, RawQuery: query}
		fs.check(t, rt.method, u, fs.serve(rt.method, u, "", fuzzToken))
	})
}

// fuzzBodyRoutes are the routes that take a JSON body.
var fuzzBodyRoutes = []struct{ method, path string }{
	{"PUT", "/v1/indexes/ev2"},
	{"POST", "/v1/indexes/ev/events"},
	{"PUT", "/v1/list-features/user/g/_"},
	{"POST", "/v1/lists/user/f/_/u3/items"},
	{"PUT", "/v1/tables/t2"},
	{"PUT", "/v1/tables/t/items/k3"},
	{"POST", "/v1/admin/backup"},
}

// FuzzBody sends any body to each route that decodes one.
func FuzzBody(f *testing.F) {
	fs := newFuzzServer(f)
	f.Add(uint8(0), `{"table_bucket":"1h","partition_bucket":"10m","retention":"24h","runway":2,"capacity":{"hot_read_units":1,"hot_write_units":1}}`)
	f.Add(uint8(1), `{"events":[{"index_id":"a","event_id":"3","timestamp":"2026-03-01T12:00:00Z","payload":"eA=="}]}`)
	f.Add(uint8(2), `{"ttl":"720h"}`)
	f.Add(uint8(3), `{"items":[{"value":"eA==","timestamp":"2026-03-01T12:00:00Z"}]}`)
	f.Add(uint8(4), `{"default_ttl":"-1s"}`)
	f.Add(uint8(5), `{"timestamp":"2026-03-01T12:00:00Z","attributes":{"a":[1,{"b":null}]},"ttl":"90s","TTL":"1s"}`)
	f.Add(uint8(6), `{"to":""}`)
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		rt := fuzzBodyRoutes[int(route)%len(fuzzBodyRoutes)]
		if rt.path == "/v1/admin/backup" && !strings.Contains(body, `"to":""`) {
			// A backup writes wherever the body says; only its refusals
			// are fuzzed.
			body = strings.ReplaceAll(body, `"to"`, `"t0"`)
		}
		u := &url.URL{Path: rt.path}
		fs.check(t, rt.method, u, fs.serve(rt.method, u, body, fuzzToken))
	})
}

// FuzzPageToken sends any page token to each paged route, alongside the
// other parameters of the page that issued a real one.
func FuzzPageToken(f *testing.F) {
	fs := newFuzzServer(f)
	for i, tok := range []string{fs.events, fs.items, fs.rows} {
		f.Add(uint8(i), tok)
		f.Add(uint8(i), tok[:len(tok)/2])
	}
	f.Add(uint8(0), "AQ")
	f.Add(uint8(2), "!!!")
	paths := []string{"/v1/indexes/ev/events?index_id=a&limit=1&order=desc", "/v1/lists/user/f/_/u1/items?limit=1", "/v1/tables/t/items?limit=1&after=2020-01-01T00:00:00Z"}
	f.Fuzz(func(t *testing.T, route uint8, token string) {
		u, err := url.ParseRequestURI(paths[int(route)%len(paths)] + "&page_token=" + url.QueryEscape(token))
		if err != nil {
			t.Fatal(err)
		}
		fs.check(t, "GET", u, fs.serve("GET", u, "", fuzzToken))
	})
}

// FuzzAuthHeader sends any Authorization header.
func FuzzAuthHeader(f *testing.F) {
	fs := newFuzzServer(f)
	f.Add("Bearer " + fuzzToken)
	f.Add("bearer  reader")
	f.Add("Basic Zm9vOmJhcg==")
	f.Add("Bearer")
	f.Add("Bearer \x00")
	targets := []struct{ method, path string }{{"GET", "/v1/indexes/ev"}, {"DELETE", "/v1/indexes/nope"}, {"GET", "/v1/admin/tables"}, {"GET", "/metrics"}, {"GET", "/v1/nowhere"}}
	f.Fuzz(func(t *testing.T, header string) {
		for _, tg := range targets {
			u := &url.URL{Path: tg.path}
			r := &http.Request{Method: tg.method, URL: u, Header: http.Header{"Authorization": {header}}, Host: "ebb.test",
				RemoteAddr: "127.0.0.1:1", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Body: http.NoBody}
			rec := httptest.NewRecorder()
			fs.h.ServeHTTP(rec, r.WithContext(context.Background()))
			fs.check(t, tg.method, u, rec)
			if rec.Code/100 == 2 && !bytes.Contains([]byte(header), []byte(fuzzToken)) && !strings.Contains(header, "reader") {
				t.Fatalf("%s %s with Authorization %q: %d", tg.method, tg.path, header, rec.Code)
			}
		}
	})
}

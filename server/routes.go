package server

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Route is one route a Server serves: an HTTP method and a path pattern
// with {wildcards}, as registered ("GET" and "/v1/indexes/{name}"). A path
// ending in "/" matches every path under it, as in http.ServeMux ("/ui/"),
// except "/" itself, which is the root alone (registered as "/{$}").
type Route struct {
	Method string
	Path   string
	// Query names the query parameters the route takes, sorted; any
	// other is refused.
	Query []string
}

func (r Route) String() string { return r.Method + " " + r.Path }

// Routes returns every route the Server serves, the built-in ones
// (/healthz, /readyz, /metrics when served, admin) and every Feature's,
// sorted by path, then method. docs/openapi.yaml describes each; a test
// holds the two together.
func (s *Server) Routes() []Route {
	return s.mux.routes()
}

// ErrorCode is a status and API code the Server answers errors with.
type ErrorCode struct {
	Status int
	Code   string
}

// ErrorCodes returns every status and code the Server maps errors onto:
// the store sentinels' mappings, those its Features added with MapError,
// and the ones it answers itself (auth, unknown routes and methods,
// oversize bodies, unexpected failures). Sorted by status, then code.
func (s *Server) ErrorCodes() []ErrorCode {
	seen := map[ErrorCode]bool{
		{http.StatusBadRequest, CodeInvalidArgument}:        true,
		{http.StatusUnauthorized, CodeUnauthenticated}:      true,
		{http.StatusForbidden, CodePermissionDenied}:        true,
		{http.StatusNotFound, CodeNotFound}:                 true,
		{http.StatusMethodNotAllowed, CodeMethodNotAllowed}: true,
		{http.StatusRequestEntityTooLarge, CodeTooLarge}:    true,
		{http.StatusInternalServerError, CodeInternal}:      true,
	}
	for _, list := range [][]errorMapping{s.mappings, storeMappings} {
		for _, m := range list {
			seen[ErrorCode{m.status, m.code}] = true
		}
	}
	out := make([]ErrorCode, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ErrorCode) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), strings.Compare(a.Code, b.Code))
	})
	return out
}

// routeMux is the Server's router: an http.ServeMux that remembers the
// patterns registered on it, for Routes.
//
// Requests are served through a second mux, serve, holding the same
// routes plus a catch-all ("/", every method) for what matches none of
// them: so a request is matched once, where asking the mux first whether
// a route matches and then serving it matched it twice. The catch-all
// hands the request to the embedded mux, which has no catch-all and so
// answers 404, 405 (with Allow) or a redirect as http.ServeMux does.
type routeMux struct {
	*http.ServeMux
	serve    *http.ServeMux
	mu       sync.Mutex
	patterns []string
	query    map[string][]string // pattern -> the query parameters it takes
}

// setQuery records the query parameters pattern takes, for Routes.
func (m *routeMux) setQuery(pattern string, names []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.query == nil {
		m.query = map[string][]string{}
	}
	m.query[pattern] = slices.Sorted(slices.Values(names))
}

// newRouteMux returns a routeMux serving unmatched requests with
// unmatched (which must not be nil).
func newRouteMux(unmatched http.Handler) *routeMux {
	m := &routeMux{ServeMux: http.NewServeMux(), serve: http.NewServeMux()}
	m.serve.Handle("/", unmatched)
	return m
}

// ServeHTTP serves r through its route, or through the catch-all.
func (m *routeMux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.serve.ServeHTTP(w, r) }

// Handle registers h like http.ServeMux.Handle, panicking as it does on a
// malformed or duplicate pattern (and then recording nothing).
func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.ServeMux.Handle(pattern, h)
	m.serve.Handle(pattern, h)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.patterns = append(m.patterns, pattern)
}

// HandleFunc registers h like http.ServeMux.HandleFunc.
func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

func (m *routeMux) routes() []Route {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Route, 0, len(m.patterns))
	for _, p := range m.patterns {
		// "METHOD /path"; a pattern without a method matches them all.
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			method, path = "", p
		}
		// "/{$}" matches "/" alone; OpenAPI and people write it "/".
		path = strings.TrimSuffix(strings.TrimSpace(path), "{$}")
		out = append(out, Route{Method: method, Path: path, Query: m.query[p]})
	}
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Method, b.Method))
	})
	return out
}

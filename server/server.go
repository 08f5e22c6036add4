package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/promreg"
	"github.com/ebb-data/ebb/store"
)

// Options configures a Server.
type Options struct {
	// DB, when set, is served whole: its indexes, lists and shared tables,
	// and the admin routes (tables, cluster) read from it.
	DB *ebb.DB
	// Admin serves the admin routes when DB is not set; nil leaves them
	// out.
	Admin Admin
	// Registerer receives the server's metrics. Nil: the metrics are kept
	// but not exported.
	Registerer prometheus.Registerer
	// Gatherer is served at /metrics. Nil: the Registerer when it is also a
	// Gatherer (a *prometheus.Registry), otherwise /metrics is not served.
	Gatherer prometheus.Gatherer
	// Logger receives request logs (debug) and internal errors. Nil
	// discards.
	Logger *slog.Logger
	// Auth, when set, requires a bearer token with the right scope on every
	// /v1 request. Nil serves /v1 without authentication; the caller is
	// responsible for listening only on loopback then.
	Auth *Auth
	// Features register their routes, in order, after DB's.
	Features []Feature
	// Now is the clock handlers use. Nil is time.Now.
	Now func() time.Time
	// Limits bounds the requests worked on at once, per class; zero
	// fields take DefaultLimits.
	Limits Limits
	// ReadTimeout bounds the time ListenAndServe gives a client to send a
	// whole request, headers and body; past it the connection is closed,
	// so that a slow or stalled body holds neither a connection nor a
	// shutdown. Zero is DefaultReadTimeout. Headers alone get at most
	// DefaultReadHeaderTimeout.
	ReadTimeout time.Duration
	// HotAddr, when set, is a second address ListenAndServe listens on,
	// serving the same routes on a lean HTTP/1.1 server (hot.go); port 0
	// picks a free port, which HotURL reports.
	HotAddr string
	// MaxConns bounds the connections each listener holds at once; past
	// it a new connection waits in the kernel's accept queue until one
	// closes (conns.go). Zero is DefaultMaxConns for the listeners
	// served; negative is refused.
	MaxConns int
	// ListCacheBytes bounds the encoded list pages kept to answer the same
	// read again while the list is unchanged (listcache.go; the embedded
	// backend only). Zero is DefaultListCacheBytes; negative keeps none.
	ListCacheBytes int64
}

// Feature registers a feature's routes on a Server being built.
type Feature func(*Server)

// HandlerFunc handles one request. It writes the response itself on
// success; on failure it returns an error and writes nothing, and the
// Server answers with the error's status and code (see errors.go).
type HandlerFunc func(http.ResponseWriter, *http.Request) error

// Resource kinds, the first half of a scope (see Auth).
const (
	KindIndex = "index"
	KindList  = "list"
	KindTable = "table"
	KindAdmin = "admin"
	// KindMetrics is GET /metrics, reached by the admin and metrics scopes.
	KindMetrics = "metrics"
)

// Resource is what a request acts on, for authorization: Kind is one of
// the Kind constants and Name the index name, list entity type or table
// name. An empty Name is a collection route (for example listing every
// index), which only the admin and *:* scopes reach.
type Resource struct{ Kind, Name string }

// ResourceFunc tells which Resource a request acts on. It runs before the
// handler and must not touch the store, so that an authorization decision
// never depends on (or reveals) whether the resource exists.
type ResourceFunc func(*http.Request) Resource

// ResourceFromPath returns a ResourceFunc naming the resource by the path
// wildcard pathValueName (already unescaped by the router): for
// "PUT /v1/indexes/{name}", ResourceFromPath(KindIndex, "name").
func ResourceFromPath(kind, pathValueName string) ResourceFunc {
	return func(r *http.Request) Resource {
		return Resource{Kind: kind, Name: r.PathValue(pathValueName)}
	}
}

// AdminResource is the ResourceFunc of administrative routes, which only the
// admin scope reaches.
func AdminResource(*http.Request) Resource { return Resource{Kind: KindAdmin} }

// Server is ebb's HTTP API. Build it with New; it is safe for concurrent
// use once built.
type Server struct {
	admin    Admin
	log      *slog.Logger
	auth     *Auth
	now      func() time.Time
	mux      *routeMux // an http.ServeMux that records its patterns (routes.go)
	gatherer prometheus.Gatherer
	mappings []errorMapping
	metrics  *metrics
	// pages keeps list reads' encoded answers (listcache.go); nil keeps
	// none.
	pages *pageCache
	admit *admission
	// readTimeout is Options.ReadTimeout, defaulted (listen.go).
	readTimeout time.Duration
	hotAddr     string
	maxConns    int                    // Options.MaxConns; zero: DefaultMaxConns
	hotURL      atomic.Pointer[string] // set once the hot listener listens
	usage       usageHistory           // the meter's snapshots, for the rate over a window (usagewindow.go)
	// draining is cancelled when Serve begins its shutdown, so that
	// requests that wait (a long poll, an event stream) end at once
	// instead of holding the drain (expirations.go).
	draining context.Context
	drain    context.CancelFunc
}

// New builds a Server: the built-in routes (/healthz, /metrics, admin), then
// each Feature's routes. It fails when the metrics cannot be registered (for
// example when another Server already registered them on the same
// Registerer).
func New(opts Options) (*Server, error) {
	if opts.DB != nil {
		if opts.Admin == nil {
			opts.Admin = opts.DB
		}
		opts.Features = append([]Feature{Indexes(opts.DB.Indexes()), Migrations(opts.DB.Migrations()), Lists(opts.DB.Lists()), Tables(opts.DB.Tables())}, opts.Features...)
		if opts.Now == nil {
			opts.Now = opts.DB.Now
		}
	}
	s := &Server{
		admin:    opts.Admin,
		log:      logger(opts.Logger),
		auth:     opts.Auth,
		now:      opts.Now,
		gatherer: opts.Gatherer,
		metrics:  newMetrics(),
	}
	s.draining, s.drain = context.WithCancel(context.Background())
	s.mux = newRouteMux(s.observe("unmatched", s.serveUnmatched))
	if s.now == nil {
		s.now = time.Now
	}
	s.readTimeout = opts.ReadTimeout
	if s.readTimeout <= 0 {
		s.readTimeout = DefaultReadTimeout
	}
	s.hotAddr = opts.HotAddr
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("server: MaxConns %d is negative; zero takes the default", opts.MaxConns)
	}
	s.maxConns = opts.MaxConns
	if opts.ListCacheBytes == 0 {
		opts.ListCacheBytes = DefaultListCacheBytes
	}
	s.pages = newPageCache(opts.ListCacheBytes, s.metrics)
	s.admit = newAdmission(opts.Limits, s.metrics.shed, s.metrics.cpuShedRatio, s.metrics.responseBytes)
	if s.gatherer == nil {
		s.gatherer, _ = opts.Registerer.(prometheus.Gatherer)
	}
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("server: register metrics: %w", err)
		}
	}
	// Health and metrics are outside /v1, so they need no token: probes and
	// scrapers carry none.
	s.mux.HandleFunc("GET /healthz", s.observe("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r, nil); err != nil {
			s.writeError(w, r, "GET /healthz", err)
			return
		}
		_ = WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	// Readiness, apart from liveness: a load balancer sends traffic once
	// the backend answers and shards exist ahead.
	s.mux.HandleFunc("GET /readyz", s.observe("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r, nil); err != nil {
			s.writeError(w, r, "GET /readyz", err)
			return
		}
		if s.admin != nil {
			if err := s.admin.Ready(r.Context()); err != nil {
				_ = WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": err.Error()})
				return
			}
		}
		_ = WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}))
	if s.gatherer != nil {
		metricsHandler := promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{})
		s.mux.HandleFunc("GET /metrics", s.observe("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			// Series name indexes, features and tables: with an auth
			// file, a scraper needs a token with the metrics scope.
			if s.auth != nil {
				if _, err := s.auth.authorize(r, Resource{Kind: KindMetrics}); err != nil {
					s.writeError(w, r, "GET /metrics", err)
					return
				}
			}
			if err := checkQuery(r, nil); err != nil {
				s.writeError(w, r, "GET /metrics", err)
				return
			}
			metricsHandler.ServeHTTP(w, r)
		}))
	}
	s.routeDashboard()
	if s.admin != nil {
		s.routeAdmin()
		if _, ok := s.admin.(ExpirationReader); ok {
			s.routeExpirations()
		}
	}
	for i, f := range opts.Features {
		if err := s.install(f); err != nil {
			if opts.Registerer != nil {
				s.metrics.unregister(opts.Registerer)
			}
			return nil, fmt.Errorf("server: feature %d: %w", i, err)
		}
	}
	return s, nil
}

// install runs a Feature, turning a panic (a malformed or duplicate route
// pattern) into an error so that a wiring mistake stops start-up with a
// message rather than a stack trace.
func (s *Server) install(f Feature) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	f(s)
	return nil
}

// Logger returns the Server's logger, for Features; never nil.
func (s *Server) Logger() *slog.Logger { return s.log }

// Now returns the current time on the Server's clock.
func (s *Server) Now() time.Time { return s.now() }

// Route registers h for pattern, an http.ServeMux pattern with a method
// ("GET /v1/indexes/{name}"). When the Server has Auth, res names the
// resource the request acts on and the token's scopes are checked against
// it before h runs. query names the query parameters the route takes; a
// request with any other, or with one given twice, is refused with 400
// invalid_argument naming it, after the token check and before h runs.
// Route panics on a malformed or duplicate pattern, like http.ServeMux;
// New turns that into an error.
func (s *Server) Route(pattern string, res ResourceFunc, h HandlerFunc, query ...string) {
	if res == nil {
		panic("server: Route " + pattern + " without a ResourceFunc")
	}
	s.mux.setQuery(pattern, query)
	s.mux.HandleFunc(pattern, s.observe(pattern, func(w http.ResponseWriter, r *http.Request) {
		release, err := s.admit.admit(r)
		if err != nil {
			if errors.Is(err, ErrOverloaded) {
				w.Header().Set("Retry-After", "1")
			}
			s.refuseUnread(w, r, pattern, err)
			return
		}
		defer release()
		if s.auth != nil {
			resource := res(r)
			token, err := s.auth.authorize(r, resource)
			if err != nil {
				s.log.Debug("request not authorized", "route", pattern, "token", token,
					"kind", resource.Kind, "name", resource.Name)
				s.refuseUnread(w, r, pattern, err)
				return
			}
		}
		if err := checkQuery(r, query); err != nil {
			s.refuseUnread(w, r, pattern, err)
			return
		}
		if err := h(w, r); err != nil {
			if w.(*statusWriter).wrote {
				// The response is under way; all that is left is to say so.
				s.log.Error("handler failed after writing its response", "route", pattern, "err", err)
				return
			}
			s.writeError(w, r, pattern, err)
		}
	}))
}

// Handler returns the http.Handler serving every route. Requests matching no
// route, or a route with another method, are answered with a JSON 404
// not_found or 405 method_not_allowed; under /v1 they need a valid token
// first when the Server has Auth, so that probing for routes without one
// learns nothing.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The mux answers a path with "." or ".." segments, or "//", with
		// a redirect to its cleaned form, for every method and before any
		// handler: DELETE /v1/tables/t/items/.. would be redirected to
		// DELETE /v1/tables/t, which a client may follow. Such paths are
		// refused instead; a key made of dots is sent escaped (%2E).
		if !cleanPath(r.URL.EscapedPath()) {
			s.observe("unmatched", func(w http.ResponseWriter, r *http.Request) {
				s.refuseUnread(w, r, "unmatched", store.Errorf(ErrBadPath, "the path has a \".\", \"..\" or empty segment; escape dots in names and keys as %%2E"))
			})(w, r)
			return
		}
		switch {
		case r.RequestURI == "*":
			// http.ServeMux answers it with an empty 400 (OPTIONS *
			// is answered before the handler, 200), and so does the
			// hot listener's gate (hotgate.go).
			s.observe("unmatched", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close")
				s.writeError(w, r, "unmatched", store.Errorf(ErrBadPath, "the request target * is only for OPTIONS"))
			})(w, r)
			return
		case r.Method == http.MethodConnect:
			// Its target is an authority, not a path: the serving mux
			// answers it itself, in plain text, never reaching the
			// catch-all.
			s.observe("unmatched", s.serveUnmatched)(w, r)
			return
		}
		s.mux.ServeHTTP(w, r) // through its route, or serveUnmatched
	})
}

// serveUnmatched answers a request that matches no route: the router's
// 404, 405 or redirect, after a token check under /v1.
func (s *Server) serveUnmatched(w http.ResponseWriter, r *http.Request) {
	if s.auth != nil && isV1(r.URL.Path) {
		if _, err := s.auth.authenticate(r); err != nil {
			s.refuseUnread(w, r, "unmatched", err)
			return
		}
	}
	// The mux's own answer is plain text; keep its status and headers
	// (Allow, Location) and replace a 404 or 405 body. The embedded mux
	// has no catch-all, so it answers as http.ServeMux does.
	s.mux.ServeMux.ServeHTTP(&unmatchedWriter{ResponseWriter: w, close: r.ContentLength != 0}, r)
}

func isV1(path string) bool { return path == "/v1" || strings.HasPrefix(path, "/v1/") }

// unmatchedWriter turns the router's plain-text 404 and 405 into JSON
// errors and lets anything else (redirects to a cleaned path) through.
type unmatchedWriter struct {
	http.ResponseWriter
	replaced bool
	close    bool // the request's body is unread: close (refuseUnread)
}

func (u *unmatchedWriter) WriteHeader(status int) {
	if u.close && (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) {
		u.Header().Set("Connection", "close")
	}
	switch status {
	case http.StatusNotFound:
		u.replaced = true
		writeErrorBody(u.ResponseWriter, status, CodeNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		u.replaced = true
		writeErrorBody(u.ResponseWriter, status, CodeMethodNotAllowed, "method not allowed; allowed: "+u.Header().Get("Allow"))
	default:
		u.ResponseWriter.WriteHeader(status)
	}
}

func (u *unmatchedWriter) Write(b []byte) (int, error) {
	if u.replaced {
		return len(b), nil // the plain-text body, already answered in JSON
	}
	return u.ResponseWriter.Write(b)
}

// observe wraps a handler with what every request gets: panic recovery,
// the status-recording writer Route relies on, metrics labelled by route
// pattern and status, and a debug log line.
func (s *Server) observe(route string, h http.HandlerFunc) http.HandlerFunc {
	rm := s.metrics.forRoute(route)
	return func(w http.ResponseWriter, r *http.Request) {
		// Wall-clock latency for the histogram; no decision depends on it.
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v) // net/http's own way to abort a response
				}
				s.log.Error("handler panicked", "route", route, "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if !sw.wrote {
					writeErrorBody(sw, http.StatusInternalServerError, CodeInternal, "internal error")
				}
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK // the handler wrote nothing at all
			}
			elapsed := time.Since(start)
			rm.observe(status, elapsed)
			// Checked first: the arguments alone would cost allocations
			// on every request.
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "route", route,
					"status", status, "duration", elapsed, "remote", r.RemoteAddr)
			}
		}()
		h(sw, r)
	}
}

// statusWriter records the status written, so that metrics see it and a
// failing handler is not answered twice.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer (for
// flushing and deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// metrics are the server's request metrics.
type metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	shed         *prometheus.CounterVec
	cpuShedRatio prometheus.Gauge
	// responseBytes is the response budget in use (respbudget.go).
	responseBytes prometheus.Gauge
	// Per listener (conns.go).
	conns        *prometheus.GaugeVec
	maxConns     *prometheus.GaugeVec
	acceptErrors *prometheus.CounterVec
	// keptPages counts list reads by whether a kept page answered them
	// (listcache.go).
	keptPages *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ebb_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern and status code.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9), // 0.5 ms .. 33 s
		}, []string{"route", "code"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_http_shed_total",
			Help: "Requests refused with 503, by class (read, write, admin) and reason: limit (the class was at its in-flight limit), cpu (the CPU guard) or memory (page reads past the response budget).",
		}, []string{"class", "reason"}),
		cpuShedRatio: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ebb_http_cpu_shed_ratio",
			Help: "Share of new reads and writes refused because the process has more goroutines ready to run than its CPUs keep up with (0 when not overloaded).",
		}),
		responseBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ebb_http_response_budget_bytes",
			Help: "Bytes of the response budget (--max-response-bytes) that page reads hold for responses being built or written.",
		}),
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_http_connections",
			Help: "Connections a listener (main or hot) holds open.",
		}, []string{"listener"}),
		maxConns: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ebb_http_connections_max",
			Help: "Connections a listener holds at most; past it new connections wait until one closes.",
		}, []string{"listener"}),
		acceptErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_http_accept_errors_total",
			Help: "Failures to accept a connection (such as too many open files), each followed by a pause and a retry.",
		}, []string{"listener"}),
		keptPages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_http_list_pages_total",
			Help: "List reads, by where the page came from: kept (the encoded answer of the same read, the list unchanged since) or read (from the store).",
		}, []string{"source"}),
	}
	// Both sources are exported from the start, at zero.
	m.keptPages.WithLabelValues("kept")
	m.keptPages.WithLabelValues("read")
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.duration, m.shed, m.cpuShedRatio, m.responseBytes, m.conns, m.maxConns, m.acceptErrors, m.keptPages}
}

func (m *metrics) register(r prometheus.Registerer) error {
	return promreg.Register(r, m.collectors()...)
}

func (m *metrics) unregister(r prometheus.Registerer) {
	for _, c := range m.collectors() {
		r.Unregister(c)
	}
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, code).Inc()
	m.duration.WithLabelValues(route, code).Observe(d.Seconds())
}

// forRoute returns the metrics of one route.
func (m *metrics) forRoute(route string) *routeMetrics { return &routeMetrics{m: m, route: route} }

// routeMetrics are one route's series. Those of its success statuses are
// looked up once, when first used (a series appears only once it has a
// request, as before), and kept: looking a series up by its labels hashes
// them under a lock, a cost every request paid.
type routeMetrics struct {
	m     *metrics
	route string
	// ok holds the series of 200, 201 and 204, by okIndex.
	ok [3]atomic.Pointer[statusMetrics]
}

type statusMetrics struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func okIndex(status int) int {
	switch status {
	case http.StatusOK:
		return 0
	case http.StatusCreated:
		return 1
	case http.StatusNoContent:
		return 2
	}
	return -1
}

func (rm *routeMetrics) observe(status int, d time.Duration) {
	i := okIndex(status)
	if i < 0 {
		rm.m.observe(rm.route, status, d)
		return
	}
	sm := rm.ok[i].Load()
	if sm == nil {
		// Two first requests may both get here; WithLabelValues hands
		// both the same series.
		code := strconv.Itoa(status)
		sm = &statusMetrics{rm.m.requests.WithLabelValues(rm.route, code), rm.m.duration.WithLabelValues(rm.route, code)}
		rm.ok[i].Store(sm)
	}
	sm.requests.Inc()
	sm.duration.Observe(d.Seconds())
}

// ErrBadPath refuses a /v1 path the router would otherwise redirect.
var ErrBadPath = store.Mark(store.ErrInvalid, "server", "bad path")

// cleanPath reports whether an escaped path has no ".", ".." or empty
// segment (a trailing slash aside).
func cleanPath(p string) bool {
	p = strings.TrimPrefix(p, "/")
	for {
		seg, rest, more := strings.Cut(p, "/")
		if seg == "." || seg == ".." || (seg == "" && more) {
			return false
		}
		if !more {
			return true
		}
		p = rest
	}
}

package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// The hot listener (docs/operations.md "The hot listener") serves the same
// routes, through the same Handler, as the main one, on a lean HTTP/1.1
// server (fasthttp) instead of net/http: one goroutine per connection
// rather than two per request, and a response written whole in one system
// call. A list read costs a fifth to a third less CPU than under
// net/http, which at one connection is what it takes to answer as fast as
// Redis (docs/performance.md "Fourth round").
//
// A request without a body is cancelled when its client hangs up, as on
// the main listener, once it has run for hotHangupDelay (hothangup.go); a
// request with a body is not (work a client abandoned runs to its end).
// Bodies are limited and refused as on the main listener.

// hotBufferedBody is the largest body the hot listener reads whole before
// the handler runs; a longer one is handed to the handler as a stream.
const hotBufferedBody = 1 << 20

// hotHeaderLimit bounds a request's line and headers on the hot listener
// (431 past it).
const hotHeaderLimit = 64 << 10

// hotServer is the hot listener's server: fasthttp's, with the
// connections it holds tracked, so that a shutdown past its drain time
// closes them as net/http's Close does.
type hotServer struct {
	s      *Server
	srv    *fasthttp.Server
	cancel context.CancelFunc // ends the context of every request
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// newHotServer returns the hot listener's server, serving h; requests'
// contexts derive from base.
func (s *Server) newHotServer(h http.Handler, base context.Context) *hotServer {
	base, cancel := context.WithCancel(base)
	hs := &hotServer{s: s, cancel: cancel, conns: map[net.Conn]struct{}{}}
	hs.srv = &fasthttp.Server{
		Handler:      func(ctx *fasthttp.RequestCtx) { s.serveHot(ctx, h, base) },
		ErrorHandler: s.hotError,
		ConnState:    hs.track,
		// net/http's defaults: no Server header, and a Content-Type
		// sniffed from the body rather than text/plain.
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		ReadTimeout:           s.readTimeout,
		IdleTimeout:           2 * time.Minute,
		MaxRequestBodySize:    hotBufferedBody,
		StreamRequestBody:     true,
		// Bodies are JSON; a multipart one is not parsed into files.
		DisablePreParseMultipartForm: true,
		// Heads arrive through the gate (hotgate.go), which bounds
		// them at hotHeaderLimit; one it rewrote may be a little longer.
		ReadBufferSize: hotHeaderLimit + 4<<10,
		Logger:         hotLogger{s},
		// Answers given during a shutdown close their connection.
		CloseOnShutdown: true,
	}
	return hs
}

func (hs *hotServer) track(c net.Conn, st fasthttp.ConnState) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	switch st {
	case fasthttp.StateNew:
		hs.conns[c] = struct{}{}
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(hs.conns, c)
	}
}

// serve serves ln until shutdown; it returns nil once shut down.
func (hs *hotServer) serve(ln net.Listener) error {
	// The gate reads through the hang-up watch, so that a byte the watch
	// read for the next request reaches the gate first.
	err := hs.srv.Serve(gateListener{Listener: hangupListener{ln}, s: hs.s})
	if errors.Is(err, net.ErrClosed) {
		return nil // closed by shutdown before Serve took it
	}
	return err
}

// shutdown stops accepting on ln and waits until ctx is done for the
// requests under way; past that it cancels their contexts and closes
// every connection still open, and returns ctx's error.
func (hs *hotServer) shutdown(ctx context.Context, ln net.Listener) error {
	err := hs.srv.ShutdownWithContext(ctx)
	// Shutdown closes the listeners Serve has taken; one it has not
	// taken yet (a shutdown right after start) is closed here.
	_ = ln.Close()
	hs.cancel()
	if err != nil {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		for c := range hs.conns {
			_ = c.Close()
		}
	}
	return err
}

// serveHot serves one request through h: an http.Request built from the
// fasthttp one (every string copied, since fasthttp reuses its buffers
// once the handler returns and handlers may keep a name they were given),
// and a ResponseWriter that fills the fasthttp response.
func (s *Server) serveHot(ctx *fasthttp.RequestCtx, h http.Handler, base context.Context) {
	if ctx.IsOptions() && string(ctx.RequestURI()) == "*" {
		// The server's own options, answered as net/http does: 200,
		// no body, before any route.
		return
	}
	if !ctx.Request.Header.IsHTTP11() {
		// Answered in the request's version, as net/http does.
		ctx.Response.Header.SetProtocol([]byte("HTTP/1.0"))
	}
	if c, ok := hotHangupConn(ctx.Conn()); ok && ctx.Request.Header.ContentLength() <= 0 && ctx.Request.Header.ContentLength() != -1 {
		// No body (-2: none declared; 0: empty), so nothing but the next
		// request is read from the connection while the handler runs.
		reqCtx, cancel := context.WithCancel(base)
		defer cancel()
		c.watch(cancel)
		defer c.stop()
		base = reqCtx
	}
	r, err := hotRequest(ctx, base)
	if err != nil {
		s.hotError(ctx, err)
		return
	}
	w := &hotWriter{ctx: ctx, header: make(http.Header, 4)}
	h.ServeHTTP(w, r)
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
}

// hotRequest builds the http.Request the handler sees.
func hotRequest(ctx *fasthttp.RequestCtx, base context.Context) (*http.Request, error) {
	// The request line's URI as sent (not fasthttp's normalized path):
	// Handler refuses dot segments itself rather than resolving them.
	uri := string(ctx.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errHotMalformed, err)
	}
	r := (&http.Request{
		Method:     string(ctx.Method()),
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, ctx.Request.Header.Len()),
		Host:       hotHost(ctx),
		RemoteAddr: hotRemoteAddr(ctx),
		RequestURI: uri,
	}).WithContext(base)
	if !ctx.Request.Header.IsHTTP11() {
		r.Proto, r.ProtoMinor = "HTTP/1.0", 0
	}
	for k, v := range ctx.Request.Header.All() {
		switch string(k) {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			// Carried by the Request's own fields; the body is whole.
			continue
		}
		// Header names arrive canonical (fasthttp normalizes them).
		r.Header[string(k)] = append(r.Header[string(k)], string(v))
	}
	// A body up to hotBufferedBody has been read whole; a longer one is
	// read by the handler as it goes, as on the main listener, which
	// refuses it past MaxBodyBytes. Either is valid until the handler
	// returns; handlers copy what they keep.
	if st := ctx.RequestBodyStream(); st != nil {
		r.Body = io.NopCloser(st)
		r.ContentLength = int64(ctx.Request.Header.ContentLength()) // -1: chunked
	} else if body := ctx.PostBody(); len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	} else {
		r.Body = http.NoBody
	}
	return r, nil
}

// hotHost returns the request's Host, "" for the gate's stand-in for an
// empty one. A connection's requests name the same host, so the string of
// the last one is reused rather than allocated again.
func hotHost(ctx *fasthttp.RequestCtx) string {
	h := ctx.Host()
	if string(h) == emptyHost {
		return ""
	}
	c, ok := hotHangupConn(ctx.Conn())
	if !ok {
		return string(h)
	}
	if c.host != string(h) {
		c.host = string(h)
	}
	return c.host
}

// hotRemoteAddr returns the client's address as net/http gives it, formed
// once per connection rather than once per request.
func hotRemoteAddr(ctx *fasthttp.RequestCtx) string {
	c, ok := hotHangupConn(ctx.Conn())
	if !ok {
		return ctx.RemoteAddr().String()
	}
	if c.remote == "" {
		c.remote = ctx.RemoteAddr().String()
	}
	return c.remote
}

// errHotMalformed is a request line the router cannot take.
var errHotMalformed = errors.New("malformed request")

// hotError answers a request the hot listener could not read or pass on,
// as the main listener does, in the API's JSON error shape: 400
// invalid_argument, or 431 too_large for oversized headers; then the
// connection is closed. A request whose headers did not arrive within the
// read timeout gets no answer, its connection closed, and one whose body
// did not is answered 400, as when a handler on the main listener fails
// to read it.
func (s *Server) hotError(ctx *fasthttp.RequestCtx, err error) {
	status, code, msg := http.StatusBadRequest, CodeInvalidArgument, "malformed request"
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		if g, ok := ctx.Conn().(*gateConn); !ok || !g.inBody {
			s.log.Debug("hot listener: no request within the read timeout", "err", err)
			_ = ctx.Conn().Close()
			return
		}
		msg = "the request body did not arrive within the read timeout"
	case errors.As(err, &small):
		status, code, msg = http.StatusRequestHeaderFieldsTooLarge, CodeTooLarge, fmt.Sprintf("request headers exceed %d bytes", hotHeaderLimit)
	}
	s.metrics.forRoute("unmatched").observe(status, 0)
	s.log.Debug("hot listener refused a request", "status", status, "err", err)
	ctx.Response.Reset()
	ctx.SetConnectionClose()
	w := &hotWriter{ctx: ctx, header: make(http.Header, 2)}
	writeErrorBody(w, status, code, msg)
}

// hotWriter is the http.ResponseWriter of a request on the hot listener:
// headers go to the fasthttp response at WriteHeader, the body into its
// buffer, and fasthttp writes the whole response, Content-Length set, once
// the handler returns.
type hotWriter struct {
	ctx         *fasthttp.RequestCtx
	header      http.Header
	wroteHeader bool
}

func (w *hotWriter) Header() http.Header { return w.header }

func (w *hotWriter) WriteHeader(status int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	resp := &w.ctx.Response
	resp.SetStatusCode(status)
	for k, vs := range w.header {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Date":
			// fasthttp writes these itself.
			continue
		case "Connection":
			if len(vs) > 0 && strings.EqualFold(vs[0], "close") {
				w.ctx.SetConnectionClose()
			}
			continue
		}
		for _, v := range vs {
			resp.Header.Add(k, v)
		}
	}
}

func (w *hotWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		if w.header.Get("Content-Type") == "" {
			w.header.Set("Content-Type", http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	return w.ctx.Write(b)
}

// hotLogger hands fasthttp's own messages to the server's logger.
type hotLogger struct{ s *Server }

func (l hotLogger) Printf(format string, args ...any) {
	l.s.log.Debug("hot listener: " + fmt.Sprintf(format, args...))
}

package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The hot listener reads requests as strictly as the main one. fasthttp's
// parser is laxer in some ways and stricter in others than net/http's (it
// takes an HTTP/2.0 request line or a header name with a space, ignores
// Transfer-Encoding: identity and Expect, refuses two equal
// Content-Lengths or an empty Host, and waits forever for headers ending
// in a bare LF), so each request's head passes a gate first: gateConn,
// between the connection and fasthttp, finds the head, checks it with
// net/http's own rules, and hands fasthttp either the head unchanged (the
// common case: CRLF lines, plain names and values, no Transfer-Encoding or
// Expect, one Host and at most one Content-Length), or one rewritten in
// that plain form from net/http's reading of it, or nothing, having
// answered the refusal itself, in the API's JSON error shape, as the main
// listener does. The body then passes unchanged, framed as the head says,
// so the gate knows where the next head starts.
//
// The gate also checks the token before the body: fasthttp reads the
// first bytes of a body (up to 8 KiB) before the handler runs, so a client
// without a valid token could hold a connection for the read timeout by
// sending a body slowly. A request with a body, under /v1 or to /metrics,
// whose token is missing or unknown is handed on without its body and
// with Connection: close: the handler refuses it at once with 401, as on
// the main listener, and the connection closes.

// gateListener hands fasthttp connections behind a gate.
type gateListener struct {
	net.Listener
	s *Server
}

func (l gateListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &gateConn{Conn: c, s: l.s}, nil
}

// Framing of the message whose body the gate is passing.
const (
	gateHead    = iota // between messages: the next bytes are a head
	gateLength         // a body of known length: bodyLeft bytes to go
	gateChunked        // a chunked body
	gateRaw            // framing unknown: everything passes as is
)

// Chunked body states.
const (
	chunkSize    = iota // a chunk-size line
	chunkData           // bodyLeft bytes of chunk data
	chunkDataEnd        // the line end after chunk data
	chunkTrailer        // trailer lines up to an empty one
)

// maxChunkLine bounds a chunk-size or trailer line the gate waits for.
const maxChunkLine = 4096

// gateConn is a hot listener connection behind the gate; fasthttp reads
// through it.
type gateConn struct {
	net.Conn
	s        *Server
	back     []byte // in's array
	in       []byte // read from the connection, not yet looked at
	out      []byte // ready for fasthttp: part of in, or of rewritten
	rewrite  []byte // a head rewritten in plain form
	state    int
	chunk    int
	bodyLeft int64
	err      error // returned once out is spent
	// inBody is set once a head has been handed on, until the next head
	// begins: a read timeout then cut a body, not a head.
	inBody bool
}

func (g *gateConn) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		if err := g.step(); err != nil {
			if len(g.out) == 0 {
				return 0, err
			}
			g.err = err
		}
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

// gateRead is how much fill reads at least at once.
const gateRead = 16 << 10

// fill reads more of the connection into in. It runs only once out is
// spent, so in's array may be reused.
func (g *gateConn) fill() error {
	if len(g.in) == 0 {
		g.in = g.back[:0]
	}
	if cap(g.in)-len(g.in) < gateRead/4 {
		grown := make([]byte, len(g.in), max(gateRead, 2*len(g.in)+gateRead))
		copy(grown, g.in)
		g.in, g.back = grown, grown
	}
	n, err := g.Conn.Read(g.in[len(g.in):cap(g.in)])
	g.in = g.in[:len(g.in)+n]
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// pass hands fasthttp the first n bytes of in as they are.
func (g *gateConn) pass(n int) {
	g.out, g.in = g.in[:n:n], g.in[n:]
}

// step makes progress: it fills out, or fails.
func (g *gateConn) step() error {
	switch g.state {
	case gateRaw:
		if len(g.in) == 0 {
			if err := g.fill(); err != nil {
				return err
			}
		}
		g.pass(len(g.in))
		return nil
	case gateLength:
		if len(g.in) == 0 {
			if err := g.fill(); err != nil {
				return err
			}
		}
		n := int(min(int64(len(g.in)), g.bodyLeft))
		g.pass(n)
		if g.bodyLeft -= int64(n); g.bodyLeft == 0 {
			g.state, g.inBody = gateHead, false
		}
		return nil
	case gateChunked:
		return g.stepChunked()
	}
	return g.stepHead()
}

// line returns the length of the line at the start of in, its "\n"
// included, reading more as needed; 0 with the framing lost when it is
// too long.
func (g *gateConn) line() (int, error) {
	for {
		if i := bytes.IndexByte(g.in, '\n'); i >= 0 {
			return i + 1, nil
		}
		if len(g.in) > maxChunkLine {
			return 0, nil
		}
		if err := g.fill(); err != nil {
			return 0, err
		}
	}
}

func (g *gateConn) stepChunked() error {
	if g.chunk == chunkData {
		if len(g.in) == 0 {
			if err := g.fill(); err != nil {
				return err
			}
		}
		n := int(min(int64(len(g.in)), g.bodyLeft))
		g.pass(n)
		if g.bodyLeft -= int64(n); g.bodyLeft == 0 {
			g.chunk = chunkDataEnd
		}
		return nil
	}
	n, err := g.line()
	if err != nil {
		return err
	}
	if n == 0 {
		g.state = gateRaw // fasthttp refuses what the gate cannot follow
		return nil
	}
	line := bytes.TrimRight(g.in[:n], "\r\n")
	switch g.chunk {
	case chunkSize:
		size, _, _ := bytes.Cut(line, []byte(";"))
		v, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		switch {
		case err != nil || v < 0:
			g.state = gateRaw
		case v == 0:
			g.chunk = chunkTrailer
		default:
			g.chunk, g.bodyLeft = chunkData, v
		}
	case chunkDataEnd:
		g.chunk = chunkSize
	case chunkTrailer:
		if len(line) == 0 {
			g.state, g.inBody = gateHead, false
		}
	}
	g.pass(n)
	return nil
}

// headEnd returns the length of the head at the start of b, its empty
// line included, or -1 when b holds no whole head. Lines end in "\n",
// with or without "\r", as net/http reads them.
func headEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		switch {
		case i < len(b) && b[i] == '\n':
			return i + 1
		case i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n':
			return i + 2
		case i+1 >= len(b):
			return -1
		}
	}
}

func (g *gateConn) stepHead() error {
	end := headEnd(g.in)
	for end < 0 {
		if len(g.in) > hotHeaderLimit {
			return g.refuse(http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request headers exceed %d bytes", hotHeaderLimit))
		}
		if err := g.fill(); err != nil {
			return err
		}
		end = headEnd(g.in)
	}
	if end > hotHeaderLimit {
		return g.refuse(http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request headers exceed %d bytes", hotHeaderLimit))
	}
	head := g.in[:end]
	h, ok := plainHead(head)
	if !ok {
		var status int
		var msg string
		if h, status, msg = readHead(head); status != 0 {
			return g.refuse(status, msg)
		}
	}
	if h.asterisk {
		// As Handler answers it on the main listener.
		return g.refuse(http.StatusBadRequest, "bad path: the request target * is only for OPTIONS")
	}
	g.in = g.in[end:]
	if g.s.auth != nil && h.hasBody() && h.rawPath != nil {
		h.path = string(h.rawPath)
	}
	if g.s.auth != nil && h.hasBody() && (isV1(h.path) || h.path == "/metrics") {
		if h.rawAuthorization != nil {
			h.authorization = []string{string(h.rawAuthorization)}
		}
		r := &http.Request{Header: http.Header{"Authorization": h.authorization}}
		if _, err := g.s.auth.authenticate(r); err != nil {
			// Refused from its head alone, as the main listener does;
			// its body is never read, so nothing after it either.
			if !h.rewrite {
				h, _, _ = readHead(head) // the parts of the plain form
			}
			h.length, h.chunked, h.close = 0, false, true
			g.err = io.EOF
		}
	}
	if h.rewrite {
		g.rewrite = h.appendTo(g.rewrite[:0])
		g.out = g.rewrite
	} else {
		g.out = head[:len(head):len(head)]
	}
	switch {
	case h.chunked:
		g.state, g.chunk, g.inBody = gateChunked, chunkSize, true
	case h.length > 0:
		g.state, g.bodyLeft, g.inBody = gateLength, h.length, true
	}
	return nil
}

// refuse answers a request the gate will not hand on, in the API's JSON
// error shape, and ends the connection, as net/http does (errors.go
// protocolError).
func (g *gateConn) refuse(status int, msg string) error {
	g.s.metrics.forRoute("unmatched").observe(status, 0)
	g.s.log.Debug("hot listener refused a request", "status", status, "err", msg)
	_, _ = g.Conn.Write(protocolError(status, msg))
	return io.EOF
}

// gatedHead is what the gate needs of a head, and, when it must be
// rewritten, the head in plain form.
type gatedHead struct {
	path          string
	authorization []string
	// From a head in plain form, slices of it: converted only when a
	// token must be checked.
	rawPath          []byte
	rawAuthorization []byte // the first
	length           int64  // Content-Length; 0 when chunked
	chunked          bool
	close            bool // add Connection: close
	rewrite          bool // hand on appendTo's head, not the one received
	asterisk         bool // a request target "*" with a method other than OPTIONS
	// The rewritten head's parts.
	requestLine string
	host        string
	header      http.Header
}

func (h gatedHead) hasBody() bool { return h.chunked || h.length > 0 }

// emptyHost stands for an empty Host header in a rewritten head, which
// fasthttp refuses and net/http takes; hotRequest turns it back into "".
const emptyHost = "ebb-empty-host.invalid"

// appendTo appends the head in plain form.
func (h *gatedHead) appendTo(b []byte) []byte {
	b = append(b, h.requestLine...)
	b = append(b, "\r\n"...)
	if h.host != "" {
		b = append(b, "Host: "+h.host+"\r\n"...)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h.header {
			if !yield(k) {
				return
			}
		}
	}) {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Expect":
			continue
		}
		for _, v := range h.header[k] {
			b = append(b, k+": "+v+"\r\n"...)
		}
	}
	for _, v := range h.header["Connection"] {
		b = append(b, "Connection: "+v+"\r\n"...)
	}
	if h.close {
		b = append(b, "Connection: close\r\n"...)
	}
	if h.header.Get("Expect") != "" && h.hasBody() {
		b = append(b, "Expect: 100-continue\r\n"...)
	}
	switch {
	case h.chunked:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	case h.length > 0:
		b = append(b, "Content-Length: "+strconv.FormatInt(h.length, 10)+"\r\n"...)
	}
	return append(b, "\r\n"...)
}

// plainHead reads a head in the plain form fasthttp and net/http read
// alike, and reports false for anything else: a line not ending in CRLF,
// a request line other than "METHOD /target HTTP/1.1" (or 1.0), a header
// name that is not a token or a value with control characters, a header
// continued on the next line, Transfer-Encoding, Expect, a Host that is
// missing, empty, repeated or odd, a Content-Length that is repeated or
// not only digits.
func plainHead(head []byte) (gatedHead, bool) {
	var h gatedHead
	rest := head
	first := true
	var hosts, lengths int
	for {
		i := bytes.Index(rest, crlf)
		if i < 0 {
			return gatedHead{}, false
		}
		line := rest[:i]
		rest = rest[i+2:]
		if first {
			first = false
			method, rest1, ok1 := bytes.Cut(line, space)
			target, proto, ok2 := bytes.Cut(rest1, space)
			if !ok1 || !ok2 || !isToken(method) || len(target) == 0 || target[0] != '/' ||
				(string(proto) != "HTTP/1.1" && string(proto) != "HTTP/1.0") || !validTarget(target) {
				return gatedHead{}, false
			}
			h.rawPath, _, _ = bytes.Cut(target, question)
			if string(proto) == "HTTP/1.1" {
				hosts = -1 // one is required
			}
			continue
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, colon)
		if !ok || !isToken(name) || !validValue(value) {
			return gatedHead{}, false
		}
		switch len(name) {
		case len("Host"):
			if bytes.EqualFold(name, []byte("Host")) {
				value = bytes.Trim(value, " \t")
				if hosts = max(hosts, 0) + 1; hosts > 1 || len(value) == 0 || !validHost(value) {
					return gatedHead{}, false
				}
			}
		case len("Content-Length"):
			if bytes.EqualFold(name, []byte("Content-Length")) {
				value = bytes.Trim(value, " \t")
				if lengths++; lengths > 1 || len(value) == 0 || len(value) > 18 {
					return gatedHead{}, false
				}
				n := int64(0)
				for _, c := range value {
					if c < '0' || c > '9' {
						return gatedHead{}, false
					}
					n = n*10 + int64(c-'0')
				}
				h.length = n
			}
		case len("Transfer-Encoding"):
			if bytes.EqualFold(name, []byte("Transfer-Encoding")) {
				return gatedHead{}, false
			}
		case len("Expect"):
			if bytes.EqualFold(name, []byte("Expect")) {
				return gatedHead{}, false
			}
		case len("Authorization"):
			if bytes.EqualFold(name, []byte("Authorization")) {
				if h.rawAuthorization == nil {
					h.rawAuthorization = bytes.Trim(value, " \t")
				}
			}
		}
	}
	if hosts < 0 {
		return gatedHead{}, false
	}
	return h, true
}

var (
	crlf     = []byte("\r\n")
	space    = []byte(" ")
	colon    = []byte(":")
	question = []byte("?")
)

// validTarget reports whether a request target has no spaces or control
// characters, and its path (before any '?') no '%' but in a %XX escape:
// net/http refuses a path with a bad escape (url.ParseRequestURI), while it
// leaves the query raw.
func validTarget(b []byte) bool {
	inPath := true
	for i, c := range b {
		if c <= ' ' || c == 0x7f {
			return false
		}
		switch {
		case c == '?':
			inPath = false
		case c == '%' && inPath:
			if i+2 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// readHead reads a head that is not in plain form as net/http's server
// does (http.ReadRequest, then the checks of its connection loop): it
// returns the head to hand on, rewritten, or the status and message to
// refuse it with.
func readHead(head []byte) (gatedHead, int, string) {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		if strings.Contains(err.Error(), "unsupported transfer encoding") {
			return gatedHead{}, http.StatusNotImplemented, "unsupported transfer encoding"
		}
		return gatedHead{}, http.StatusBadRequest, "malformed request"
	}
	if r.ProtoMajor != 1 {
		return gatedHead{}, http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	}
	// http.ReadRequest takes Host out of the header; net/http's server
	// checks it from the raw header.
	var hosts [][]byte
	for _, line := range bytes.Split(head, []byte("\n"))[1:] {
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(name, []byte("Host")) {
			hosts = append(hosts, bytes.Trim(value, " \t\r"))
		}
	}
	if r.ProtoAtLeast(1, 1) && len(hosts) == 0 && r.Method != http.MethodConnect {
		return gatedHead{}, http.StatusBadRequest, "missing required Host header"
	}
	if len(hosts) == 1 && !validHost(hosts[0]) {
		return gatedHead{}, http.StatusBadRequest, "malformed Host header"
	}
	for k, vs := range r.Header {
		if !isToken([]byte(k)) {
			return gatedHead{}, http.StatusBadRequest, "invalid header name"
		}
		for _, v := range vs {
			if !validValue([]byte(v)) {
				return gatedHead{}, http.StatusBadRequest, "invalid header value"
			}
		}
	}
	expect := r.Header.Get("Expect")
	if expect != "" && !(strings.EqualFold(strings.TrimSpace(expect), "100-continue")) {
		return gatedHead{}, http.StatusExpectationFailed, "unsupported expectation; only 100-continue is"
	}
	proto := "HTTP/1.1"
	if r.ProtoMinor == 0 {
		proto = "HTTP/1.0"
	}
	h := gatedHead{
		asterisk:      r.RequestURI == "*" && r.Method != http.MethodOptions,
		path:          r.URL.Path,
		authorization: r.Header["Authorization"],
		chunked:       len(r.TransferEncoding) > 0,
		length:        max(r.ContentLength, 0),
		rewrite:       true,
		requestLine:   r.Method + " " + r.RequestURI + " " + proto,
		header:        r.Header,
	}
	if len(hosts) == 1 {
		h.host = string(hosts[0])
		if h.host == "" {
			h.host = emptyHost
		}
	}
	if expect != "" && !(r.ProtoAtLeast(1, 1) && r.ContentLength != 0) {
		// net/http sends 100 Continue only before a body it will read.
		r.Header.Del("Expect")
	}
	return h, 0, ""
}

// isToken reports whether b is an HTTP token (RFC 9110 section 5.6.2), the
// form of a method and a header name.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenByte[c] {
			return false
		}
	}
	return true
}

var tokenByte = alnumAnd("!#$%&'*+-.^_`|~")

// alnumAnd is the set of ASCII letters, digits and the bytes of extra.
func alnumAnd(extra string) (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range extra {
		t[c] = true
	}
	return t
}

// validValue reports whether b holds no control characters but tabs, as
// net/http requires of header values.
func validValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether b is made of the bytes net/http takes in a
// Host header (golang.org/x/net/http/httpguts.ValidHostHeader).
func validHost(b []byte) bool {
	for _, c := range b {
		if !hostByte[c] {
			return false
		}
	}
	return true
}

var hostByte = alnumAnd("!$%&'()*+,-.:;=[]_~")

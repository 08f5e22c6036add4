package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// fuzzConn is a connection that reads in and writes to out.
type fuzzConn struct {
	net.Conn // nil: only Read and Write are used
	in       io.Reader
	out      bytes.Buffer
}

func (c *fuzzConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *fuzzConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// FuzzGate sends the hot listener's gate arbitrary bytes. The invariants:
// it ends (at the input's end) without panicking; every head it hands
// fasthttp is one net/http reads, as HTTP/1.x, with the same framing; and
// what it refuses it answers with one JSON error response.
func FuzzGate(f *testing.F) {
	for _, seed := range []string{
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;e=1\r\n{}\r\n0\r\nT: 1\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\nX: y\n\n",
		"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: \r\nContent-Length: 1\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\nx",
		"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
		"OPTIONS * HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	s, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &fuzzConn{in: bytes.NewReader(data)}
		g := &gateConn{Conn: c, s: s}
		deadline := time.Now().Add(5 * time.Second)
		for steps := 0; ; steps++ {
			if time.Now().After(deadline) {
				t.Fatalf("the gate still runs after %d steps on %d bytes", steps, len(data))
			}
			head := g.state == gateHead
			err := g.step()
			if head && len(g.out) > 0 {
				r, rerr := http.ReadRequest(bufio.NewReader(bytes.NewReader(g.out)))
				if rerr != nil || r.ProtoMajor != 1 {
					t.Fatalf("the gate handed on %q, which net/http does not read: %v", g.out, rerr)
				}
				chunked := len(r.TransferEncoding) > 0
				if chunked != (g.state == gateChunked) || (!chunked && max(r.ContentLength, 0) != g.bodyLeft && g.state == gateLength) {
					t.Fatalf("the gate frames %q as state %d, %d bytes; net/http as chunked %v, %d bytes", g.out, g.state, g.bodyLeft, chunked, r.ContentLength)
				}
			}
			g.out = nil
			if err != nil {
				break
			}
		}
		if c.out.Len() > 0 {
			resp, err := http.ReadResponse(bufio.NewReader(&c.out), nil)
			if err != nil || resp.StatusCode < 400 || resp.Header.Get("Content-Type") != "application/json" || !resp.Close {
				t.Fatalf("the gate answered %q (%v)", c.out.String(), err)
			}
		}
	})
}

package server

import (
	"bytes"
	"fmt"
	"testing"
)

// TestMaxConnsFor: three quarters of the open-file limit, shared by the
// listeners, at most maxConnsCeiling each, at least one.
func TestMaxConnsFor(t *testing.T) {
	for _, c := range []struct {
		nofile    uint64
		listeners int
		want      int
	}{
		{1024, 2, 384},
		{1024, 1, 768},
		{256, 2, 96},
		{256, 1, 192},
		{65536, 2, maxConnsCeiling},
		{1 << 20, 1, maxConnsCeiling},
		{0, 2, maxConnsCeiling}, // unknown
		{2, 2, 1},
	} {
		if got := maxConnsFor(c.nofile, c.listeners); got != c.want {
			t.Errorf("maxConnsFor(%d, %d) = %d, want %d", c.nofile, c.listeners, got, c.want)
		}
	}
}

// TestHeadEnd: a head ends at its first empty line, whether lines end
// in CRLF or a bare LF.
func TestHeadEnd(t *testing.T) {
	for in, want := range map[string]int{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody": 27,
		"GET / HTTP/1.1\nHost: x\n\nbody":       24,
		"GET / HTTP/1.1\r\nHost: x\n\r\n":       26,
		"GET / HTTP/1.1\r\nHost: x\r\n":         -1,
		"GET / HTTP/1.1\r\nHost: x\r\n\r":       -1,
		"GET / HTTP/1.1\r\nHost: x\r\n\rX":      -1,
		"":                                      -1,
	} {
		if got := headEnd([]byte(in)); got != want {
			t.Errorf("headEnd(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestAsProtocolError: net/http's own plain-text answers become JSON
// errors; a write that only starts like one, such as part of a response
// body, is left alone.
func TestAsProtocolError(t *testing.T) {
	const h = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	for in, want := range map[string]int{
		"HTTP/1.1 400 Bad Request" + h + "400 Bad Request":                                                                                           400,
		"HTTP/1.1 400 Bad Request: invalid header name" + h + "400 Bad Request: invalid header name":                                                 400,
		"HTTP/1.1 431 Request Header Fields Too Large" + h + "431 Request Header Fields Too Large":                                                   431,
		"HTTP/1.1 501 Not Implemented" + h + "Unsupported transfer encoding":                                                                         501,
		"HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + h + "505 HTTP Version Not Supported: unsupported protocol version": 505,
		"HTTP/1.0 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\nDate: Thu, 26 Nov 2026 17:00:00 GMT\r\n\r\n":                   417,
		"HTTP/1.1 400 Bad Request" + h + "400 Bad Request and more":                                                                                  0,
		"HTTP/1.1 400 Bad Request" + h:                                      0,
		"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 5\r\n\r\nhello": 0,
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":                      0,
		"{\"items\":[]}": 0,
	} {
		out, ok := asProtocolError([]byte(in))
		switch {
		case want == 0 && ok:
			t.Errorf("%q was taken for net/http's answer: %q", in, out)
		case want != 0 && (!ok || !bytes.HasPrefix(out, []byte(fmt.Sprintf("HTTP/1.1 %d ", want))) || !bytes.Contains(out, []byte("application/json"))):
			t.Errorf("%q became %q, %v", in, out, ok)
		}
	}
}

package server

import "testing"

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

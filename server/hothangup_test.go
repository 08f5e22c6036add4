package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/server"
)

// slowFeature serves GET /v1/slow, which takes 50 ms (five times the hot
// listener's delay before it watches for a hang-up) and answers with its
// context's state, and GET /v1/quick, which answers at once.
func slowFeature(s *server.Server) {
	s.Route("GET /v1/slow", server.AdminResource, func(w http.ResponseWriter, r *http.Request) error {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
			return r.Context().Err()
		}
		return server.WriteJSON(w, http.StatusOK, map[string]string{"ctx": "live"})
	})
	s.Route("GET /v1/quick", server.AdminResource, func(w http.ResponseWriter, r *http.Request) error {
		return server.WriteJSON(w, http.StatusOK, map[string]string{"quick": "yes"})
	})
}

// readAnswer reads one response from br and returns its status and body.
func readAnswer(t *testing.T, br *bufio.Reader) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestHotHangUpWatchKeepsTheConnection checks what watching for a hang-up
// must not break on the hot listener: a request pipelined behind a slow
// one (whose first byte the watch reads) is answered whole and in turn,
// the slow one is not taken for abandoned, and the connection serves
// further requests once the watch has been cut short, both at once and
// after a pause.
func TestHotHangUpWatchKeepsTheConnection(t *testing.T) {
	s, _ := newServer(t, server.Options{Features: []server.Feature{slowFeature}})
	url := server.ServeHot(t, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	const slow, quick = "GET /v1/slow HTTP/1.1\r\nHost: x\r\n\r\n", "GET /v1/quick HTTP/1.1\r\nHost: x\r\n\r\n"
	want := func(what string, status int, body string, wantBody string) {
		t.Helper()
		if status != http.StatusOK || body != wantBody {
			t.Fatalf("%s: %d %s, want 200 %s", what, status, body, wantBody)
		}
	}
	// Pipelined: the second request is on the wire while the first runs.
	if _, err := io.WriteString(conn, slow+quick); err != nil {
		t.Fatal(err)
	}
	st, body := readAnswer(t, br)
	want("slow request with one pipelined behind it", st, body, `{"ctx":"live"}`)
	st, body = readAnswer(t, br)
	want("pipelined request", st, body, `{"quick":"yes"}`)
	// Pipelined while the first is being watched: the watch reads the
	// second request's first byte, which fasthttp must still get.
	if _, err := io.WriteString(conn, slow); err != nil {
		t.Fatal(err)
	}
	time.Sleep(25 * time.Millisecond)
	if _, err := io.WriteString(conn, quick); err != nil {
		t.Fatal(err)
	}
	st, body = readAnswer(t, br)
	want("slow request with one sent behind it while it ran", st, body, `{"ctx":"live"}`)
	st, body = readAnswer(t, br)
	want("request sent while the one before it ran", st, body, `{"quick":"yes"}`)
	// One after the other, and after a pause.
	for _, pause := range []time.Duration{0, 0, 30 * time.Millisecond} {
		time.Sleep(pause)
		if _, err := io.WriteString(conn, slow); err != nil {
			t.Fatal(err)
		}
		st, body = readAnswer(t, br)
		want("slow request", st, body, `{"ctx":"live"}`)
		if _, err := io.WriteString(conn, quick); err != nil {
			t.Fatal(err)
		}
		st, body = readAnswer(t, br)
		want("quick request after a slow one", st, body, `{"quick":"yes"}`)
	}
}

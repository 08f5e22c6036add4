package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/server"
)

func TestRequireLoopback(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:7070": true,
		"127.0.0.2:7070": true,
		"[::1]:7070":     true,
		"localhost:7070": true,
		"0.0.0.0:7070":   false,
		":7070":          false,
		"[::]:7070":      false,
		"10.1.2.3:7070":  false,
		"example.com:80": false,
		"127.0.0.1":      false, // no port
	}
	for addr, ok := range cases {
		if err := server.RequireLoopback(addr); (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

// TestSlowRequestsAreCutOff: a client that sends its headers or its body
// too slowly loses its connection at the read timeout, and a stalled body
// does not hold a shutdown for the whole drain time; on the main listener
// and on the hot one.
func TestSlowRequestsAreCutOff(t *testing.T) {
	for _, listener := range []string{"main", "hot"} {
		t.Run(listener, func(t *testing.T) { testSlowRequestsAreCutOff(t, listener == "hot") })
	}
}

func testSlowRequestsAreCutOff(t *testing.T, hot bool) {
	const timeout = 300 * time.Millisecond
	hotAddr := ""
	if hot {
		hotAddr = "127.0.0.1:0"
	}
	srv, err := server.New(server.Options{ReadTimeout: timeout, HotAddr: hotAddr, Features: []server.Feature{func(s *server.Server) {
		s.Route("POST /v1/echo", server.AdminResource, func(w http.ResponseWriter, r *http.Request) error {
			var v map[string]any
			if err := server.DecodeJSON(r, &v); err != nil {
				return err
			}
			return server.WriteJSON(w, http.StatusOK, v)
		})
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- srv.ListenAndServe(ctx, "127.0.0.1:0", 30*time.Second, func(url string) { ready <- url })
	}()
	addr := strings.TrimPrefix(<-ready, "http://")
	if hot {
		addr = strings.TrimPrefix(srv.HotURL(), "http://")
	}

	// stall sends the start of a request and reports how long the server
	// took to answer or close the connection, and what it answered.
	stall := func(partial string) (time.Duration, string) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, partial); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(conn)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the server still held the connection after 10 s (read %q)", got)
		}
		first, _, _ := strings.Cut(string(got), "\r\n")
		return time.Since(start), first
	}
	// Headers not in by the deadline: the connection closes unanswered,
	// on both listeners (net/http's way).
	if took, status := stall("POST /v1/echo HTTP/1.1\r\nHost: x\r\n"); took > 5*timeout || status != "" {
		t.Errorf("slow headers held the connection for %v and were answered %q", took, status)
	}
	took, status := stall("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
	if took > 5*timeout {
		t.Errorf("a stalled body held the connection for %v", took)
	}
	// The handler fails to read the body (400), or the connection
	// closes; the same on both listeners.
	if status != "" && !strings.Contains(status, " 400 ") {
		t.Errorf("a stalled body was answered %q, want 400 or a closed connection", status)
	}

	// A shutdown with a stalled body in flight ends well before the
	// 30 s drain.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(timeout / 3) // the handler is now waiting on the body
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 5*timeout {
			t.Errorf("shutdown took %v with a stalled body in flight", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown still waiting on a stalled body after 10 s")
	}
}

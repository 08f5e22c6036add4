package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// ServeHot serves s on a hot listener of its own (as ListenAndServe does
// with Options.HotAddr) until the test ends, and returns its URL.
func ServeHot(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hot := s.newHotServer(s.Handler(), context.Background())
	done := make(chan error, 1)
	go func() { done <- hot.serve(ln) }()
	t.Cleanup(func() {
		// fasthttp counts a connection that has carried no request yet
		// as busy for its first 5 s (whole seconds, so up to 6), as
		// net/http does, and a shutdown waits for it: an HTTP client
		// leaves such a connection open when a request it dialed for
		// took another that came free first. ebb serve's drain waits
		// 30 s (--shutdown-timeout); so does this one.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := hot.shutdown(ctx, ln); err != nil {
			t.Errorf("hot listener shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("hot listener: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// HoldResponseBudget takes n bytes of s's response budget, waiting for
// them if need be, as page reads under way would hold them, and returns
// the function that gives them back.
func HoldResponseBudget(t testing.TB, s *Server, n int64) (release func()) {
	t.Helper()
	got, err := s.admit.budget.take(context.Background(), n, n)
	if err != nil || got != n {
		t.Fatalf("hold %d bytes of the response budget: took %d, %v", n, got, err)
	}
	return func() { s.admit.budget.release(n) }
}

// RoundTrip writes the raw request req on conn and reads its answer from
// br, the body drained, as a load generator does; it returns the status
// and the body's length.
func RoundTrip(tb testing.TB, conn io.Writer, br *bufio.Reader, req string) (status int, n int64) {
	if _, err := io.WriteString(conn, req); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		tb.Fatal(err)
	}
	n, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, n
}

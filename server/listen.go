package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Deadlines on reading requests (docs/operations.md "Timeouts").
const (
	// DefaultReadTimeout bounds reading a whole request, body included: an
	// 8 MiB body at 1 Mbit/s takes about 70 s, so two minutes leaves room
	// for slow links while a stalled upload lets its connection go.
	DefaultReadTimeout = 2 * time.Minute
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
)

// ListenAndServe serves the API on addr until ctx is done, then shuts down
// gracefully: it stops accepting, waits up to drain for in-flight
// requests, and closes the connections still open after that. ready is
// called with the server's URL once it listens (addr may pick port 0).
// With Options.HotAddr it serves the same routes on the hot listener too
// (hot.go), whose URL HotURL returns by the time ready is called.
func (s *Server) ListenAndServe(ctx context.Context, addr string, drain time.Duration, ready func(url string)) error {
	ln, hotLn, err := Listen(addr, s.hotAddr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln, hotLn, drain, ready)
}

// Listen binds addr and, when hotAddr is not empty, the hot listener's
// address, for Serve: a process binds its ports before it opens its store,
// so that a port taken fails the start at once and probes reach it while
// the store opens.
func Listen(addr, hotAddr string) (ln, hotLn net.Listener, err error) {
	if ln, err = net.Listen("tcp", addr); err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if hotAddr != "" {
		if hotLn, err = net.Listen("tcp", hotAddr); err != nil {
			_ = ln.Close()
			return nil, nil, fmt.Errorf("listen on %s (hot listener): %w", hotAddr, err)
		}
	}
	return ln, hotLn, nil
}

// Serve is ListenAndServe on listeners already bound (Listen): ln for the
// API, hotLn, when not nil, for the hot listener. It closes them.
func (s *Server) Serve(ctx context.Context, ln, hotLn net.Listener, drain time.Duration, ready func(url string)) error {
	listeners := 1
	if hotLn != nil {
		listeners = 2
	}
	maxConns := s.maxConns
	if maxConns == 0 {
		maxConns = DefaultMaxConns(listeners)
	}
	mainLn := s.newConnListener(ln, "main", maxConns)
	mainLn.jsonErrors = true
	ln = mainLn
	if hotLn != nil {
		hotLn = s.newConnListener(hotLn, "hot", maxConns)
	}
	s.log.Info("connections per listener", "max_conns", maxConns, "open_file_limit", openFileLimit())
	handler := s.Handler()
	httpSrv := &http.Server{
		Handler: handler,
		// A request whose headers or body arrive too slowly fails its
		// read (a handler decoding the body answers 400) and its
		// connection is closed.
		ReadHeaderTimeout: min(DefaultReadHeaderTimeout, s.readTimeout),
		ReadTimeout:       s.readTimeout,
		IdleTimeout:       2 * time.Minute,
		// The hot listener's bound too (431 past it).
		MaxHeaderBytes: hotHeaderLimit,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 2)
	go func() { served <- httpSrv.Serve(ln) }()
	var hotSrv *hotServer
	if hotLn != nil {
		// Its requests' contexts end once the drain time is over, as
		// net/http's do at Close.
		hotSrv = s.newHotServer(handler, context.WithoutCancel(ctx))
		go func() { served <- hotSrv.serve(hotLn) }()
		u := "http://" + hotLn.Addr().String()
		s.hotURL.Store(&u)
	}
	// The CPU guard runs while the server does.
	guardCtx, stopGuard := context.WithCancel(ctx)
	guardDone := make(chan struct{})
	go func() { defer close(guardDone); s.admit.cpu.run(guardCtx) }()
	defer func() { stopGuard(); <-guardDone }()
	if ready != nil {
		ready("http://" + ln.Addr().String())
	}
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "timeout", drain)
		s.drain()
	case err := <-served:
		// Serve returns only on failure until Shutdown is called.
		_ = httpSrv.Close()
		if hotSrv != nil {
			now, cancel := context.WithCancel(ctx)
			cancel() // no drain: close at once
			_ = hotSrv.shutdown(now, hotLn)
		}
		return fmt.Errorf("serve: %w", err)
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	// Both listeners drain at once; each closes what is still open at the
	// drain time.
	hotDone := make(chan struct{})
	go func() {
		defer close(hotDone)
		if hotSrv == nil {
			return
		}
		if err := hotSrv.shutdown(drainCtx, hotLn); err != nil {
			s.log.Warn("requests still running on the hot listener at the shutdown timeout; closing its connections", "err", err)
		}
	}()
	if err := httpSrv.Shutdown(drainCtx); err != nil {
		s.log.Warn("requests still running at the shutdown timeout; closing their connections", "err", err)
		_ = httpSrv.Close()
	}
	<-hotDone
	<-served // http.ErrServerClosed
	if hotSrv != nil {
		<-served // nil once shut down
	}
	return nil
}

// HotURL returns the hot listener's URL once ListenAndServe listens on
// it, or "" (no Options.HotAddr, or not listening yet).
func (s *Server) HotURL() string {
	if u := s.hotURL.Load(); u != nil {
		return *u
	}
	return ""
}

// RequireLoopback refuses a non-loopback listen address: without an auth
// file every client that can reach the port could read and delete
// everything.
func RequireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	what := "address " + host
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		what = "every interface"
	}
	return fmt.Errorf("refusing to listen on %s (%s) without --auth-file: any client that can reach it could read and delete all data; "+
		"pass --auth-file FILE with bearer tokens, or listen on a loopback address such as 127.0.0.1:7070", addr, what)
}

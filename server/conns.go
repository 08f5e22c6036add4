package server

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Connections per listener (docs/operations.md "Connections").
//
// A process has a bounded number of open files, and every connection a
// listener accepts holds one. Past the limit, accepting fails with EMFILE,
// and so does everything else that opens a file: the store's tables and
// log included. So each listener holds at most a fixed number of
// connections, leaving files for the rest of the process; a connection
// past the cap waits in the kernel's accept queue until one closes, as
// with nginx's worker_connections or HAProxy's maxconn. Should accepting
// fail anyway (the limit shared with something else, or a cap set above
// it), the listener retries with a growing pause, as net/http does, rather
// than give up.

// maxConnsCeiling is the most connections DefaultMaxConns gives a listener,
// whatever the open-file limit: past a few thousand, connections add
// memory (a read buffer each) and no throughput, which the admission
// limits bound.
const maxConnsCeiling = 4096

// DefaultMaxConns returns the connections each of listeners listeners
// holds at most by default: three quarters of the process's open-file
// limit shared between them, the last quarter kept for the store and the
// rest of the process, and at most 4096 each. At a limit of 1024 that is
// 384 each with the hot listener, 768 without it.
func DefaultMaxConns(listeners int) int {
	return maxConnsFor(openFileLimit(), listeners)
}

// maxConnsFor is DefaultMaxConns at an open-file limit of nofile (0:
// unknown, which takes the ceiling).
func maxConnsFor(nofile uint64, listeners int) int {
	if listeners < 1 {
		listeners = 1
	}
	if nofile == 0 || nofile/4*3/uint64(listeners) >= maxConnsCeiling {
		return maxConnsCeiling
	}
	return max(1, int(nofile/4*3)/listeners)
}

// Accept retries after an error that ends once connections or memory are
// freed: from 5 ms, doubling, up to a second (net/http's pauses).
const (
	acceptRetryFirst = 5 * time.Millisecond
	acceptRetryMax   = time.Second
)

// connListener is a listener of ListenAndServe: it holds at most
// cap(slots) connections at once and rides out accept errors that pass
// once connections close.
type connListener struct {
	net.Listener
	name string // "main" or "hot", the metrics' listener label
	// jsonErrors turns net/http's own plain-text answers to requests it
	// cannot read into the API's JSON errors (errors.go asProtocolError).
	jsonErrors bool
	log        *slog.Logger
	slots      chan struct{} // one per connection held
	closed     chan struct{} // closed by Close
	once       sync.Once
	open       prometheus.Gauge
	errs       prometheus.Counter
	// warnFull is set while a log line saying the listener is full may
	// be written: once as it fills, and again once it has drained to
	// half, so that a listener sitting at its cap does not flood the log.
	warnFull atomic.Bool
}

// newConnListener wraps ln, named name, holding at most max connections.
func (s *Server) newConnListener(ln net.Listener, name string, max int) *connListener {
	l := &connListener{
		Listener: ln,
		name:     name,
		log:      s.log,
		slots:    make(chan struct{}, max),
		closed:   make(chan struct{}),
		open:     s.metrics.conns.WithLabelValues(name),
		errs:     s.metrics.acceptErrors.WithLabelValues(name),
	}
	s.metrics.maxConns.WithLabelValues(name).Set(float64(max))
	l.open.Set(0)
	l.warnFull.Store(true)
	return l
}

// Accept waits for a free slot, then for a connection.
func (l *connListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if l.warnFull.CompareAndSwap(true, false) {
			l.log.Warn("listener at its connection cap; new connections wait until one closes",
				"listener", l.name, "max_conns", cap(l.slots))
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	failures, pause := 0, time.Duration(0)
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			if failures > 0 {
				l.log.Info("accepting connections again", "listener", l.name, "failed_accepts", failures)
			}
			l.open.Inc()
			return &heldConn{Conn: c, l: l}, nil
		}
		if !retryableAccept(err) {
			<-l.slots
			return nil, err
		}
		failures++
		l.errs.Inc()
		if failures == 1 {
			l.log.Warn("accepting a connection failed; retrying with a growing pause until connections close",
				"listener", l.name, "err", err, "open_conns", len(l.slots)-1)
		}
		pause = min(max(2*pause, acceptRetryFirst), acceptRetryMax)
		timer := time.NewTimer(pause)
		select {
		case <-timer.C:
		case <-l.closed:
			timer.Stop()
			<-l.slots
			return nil, net.ErrClosed
		}
	}
}

// Close stops Accept, including one waiting for a slot or retrying, and
// closes the listener; connections already accepted stay open. Safe to
// call more than once (both servers' shutdowns close it).
func (l *connListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// release frees the slot of a connection that closed.
func (l *connListener) release() {
	<-l.slots
	l.open.Dec()
	if len(l.slots) <= cap(l.slots)/2 {
		l.warnFull.Store(true)
	}
}

// retryableAccept reports whether an accept error passes once files,
// buffers or memory are freed, or concerns only the connection that was
// being accepted: the listener itself is fine.
func retryableAccept(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// heldConn is an accepted connection holding a slot of its listener until
// it is closed.
type heldConn struct {
	net.Conn
	l    *connListener
	once sync.Once
}

// Write writes b, or, on the main listener, the JSON form of net/http's
// own answer to a request it could not read.
func (c *heldConn) Write(b []byte) (int, error) {
	if c.l.jsonErrors {
		if out, ok := asProtocolError(b); ok {
			if _, err := c.Conn.Write(out); err != nil {
				return 0, err
			}
			return len(b), nil
		}
	}
	return c.Conn.Write(b)
}

func (c *heldConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
	return err
}

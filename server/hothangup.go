package server

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// A hang-up on the hot listener. fasthttp runs a request's handler on its
// connection's goroutine and reads nothing from the connection until the
// handler has returned, so it never learns that a client went away
// mid-request. net/http does: once a request's body is read, it keeps a
// read of one byte pending on the connection, and cancels the request's
// context when that read fails. The hot listener does the same for a
// request without a body (every read), but only once the request has run
// for hotHangupDelay, so that the requests that make it the hot listener,
// which take microseconds, pay for a timer and no more.

// hotHangupDelay is how long a request without a body runs on the hot
// listener before a hang-up of its client is watched for; a hang-up is
// then noticed at once. A request that has run this long has cost far more
// than the watch does.
const hotHangupDelay = 10 * time.Millisecond

// hangupListener hands out connections that can watch for a hang-up.
type hangupListener struct{ net.Listener }

func (l hangupListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &hangupConn{Conn: c}, nil
}

// hotHangupConn finds the hang-up watch of a hot listener connection,
// under the gate (hotgate.go) that fasthttp reads through.
func hotHangupConn(c net.Conn) (*hangupConn, bool) {
	if g, ok := c.(*gateConn); ok {
		c = g.Conn
	}
	h, ok := c.(*hangupConn)
	return h, ok
}

// hangupConn is a connection of the hot listener. Its fields other than
// the watch's are used on the connection's goroutine only (fasthttp's
// reads, its deadlines, and the handler's start and end); a watch's read
// ends before the handler returns, so what it read is handed on without a
// lock.
type hangupConn struct {
	net.Conn
	deadline time.Time // the read deadline fasthttp set last
	pending  []byte    // read by a watch, for fasthttp's next read
	one      [1]byte
	host     string // the Host of the connection's last request (hot.go)
	remote   string // the client's address, formed at the first request

	w hangupWatch
}

// hangupWatch is one connection's watch, reused from request to request.
type hangupWatch struct {
	timer  *time.Timer
	wg     sync.WaitGroup // the watch's read, once the timer has fired
	cancel context.CancelFunc

	mu    sync.Mutex
	state watchState
}

type watchState uint8

const (
	watchArmed   watchState = iota // the timer may fire
	watchReading                   // a read of one byte is pending
	watchDone                      // the read returned
	watchStopped                   // the handler returned
)

func (c *hangupConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *hangupConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	return c.Conn.SetReadDeadline(t)
}

func (c *hangupConn) SetDeadline(t time.Time) error {
	c.deadline = t
	return c.Conn.SetDeadline(t)
}

// watch calls cancel if the client hangs up while the handler runs, once
// it has run for hotHangupDelay. The caller must call stop when the
// handler returns, before the connection is read again.
func (c *hangupConn) watch(cancel context.CancelFunc) {
	w := &c.w
	w.cancel = cancel
	w.state = watchArmed
	w.wg.Add(1)
	if w.timer == nil {
		w.timer = time.AfterFunc(hotHangupDelay, c.read)
	} else {
		w.timer.Reset(hotHangupDelay)
	}
}

// read is the watch: one byte read from the connection. A byte is the
// next request's, pipelined, and kept for fasthttp; the end of the stream
// or a reset is a hang-up.
func (c *hangupConn) read() {
	w := &c.w
	defer w.wg.Done()
	w.mu.Lock()
	if w.state == watchStopped {
		w.mu.Unlock()
		return
	}
	w.state = watchReading
	w.mu.Unlock()
	n, err := c.Conn.Read(c.one[:])
	w.mu.Lock()
	stopped := w.state == watchStopped
	w.state = watchDone
	w.mu.Unlock()
	switch {
	case n > 0:
		c.pending = c.one[:n]
	case err != nil && !stopped && !errors.Is(err, os.ErrDeadlineExceeded):
		// Not the read stop cut short, nor fasthttp's read timeout
		// passing while the handler runs: the client has gone.
		w.cancel()
	}
}

// stop ends the watch, cutting its read short if one is pending, and
// waits for it.
func (c *hangupConn) stop() {
	w := &c.w
	if w.timer.Stop() {
		w.wg.Done() // the watch never began
		return
	}
	w.mu.Lock()
	was := w.state
	w.state = watchStopped
	if was == watchReading {
		_ = c.Conn.SetReadDeadline(aLongTimeAgo)
	}
	w.mu.Unlock()
	w.wg.Wait()
	if was == watchReading {
		_ = c.Conn.SetReadDeadline(c.deadline)
	}
}

// aLongTimeAgo is a deadline in the past, which ends a pending read at
// once.
var aLongTimeAgo = time.Unix(1, 0)

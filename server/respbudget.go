package server

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The response budget bounds the memory that page reads (index events,
// list items, shared-table items) hold for their responses, for the whole
// process, both listeners together. A page is bounded by MaxPageBytes of
// data, over 5.5 MB once encoded; without a bound on how many are in
// flight, 256 concurrent readers of such pages took the process to 4 GiB,
// and the Go heap kept most of it afterwards.
//
// A page read takes its share before it reads anything: the encoded size
// of a full page when the budget has it, otherwise what is left, down to
// pageFloor, and then reads a page of as much data as its share holds
// (ending early with a next_page_token, as at MaxPageBytes). Only when
// less than pageFloor is left does it wait, for at most Limits.Queue, and
// then it is answered 503 with Retry-After. Once the page is encoded its
// share is trued up to the bytes of the body, and given back once the
// body has been handed to the connection (main listener) or written by
// it (hot listener, which writes after the handler returns).
//
// Reads of small pages take a full share for the few microseconds of
// their scan and keep only their body's bytes after it, so they are held
// back only while large pages use up the budget.

// DefaultResponseBytes is the default of Limits.ResponseBytes: room for
// about 12 pages of the largest size in flight at once.
const DefaultResponseBytes = 64 << 20

const (
	// pageShare is the share a page read asks for: a page of
	// MaxPageBytes of data, encoded as JSON (base64 takes 4 bytes for
	// 3), with room for the fields around the items.
	pageShare = MaxPageBytes/3*4 + 256<<10
	// pageFloor is the least share a page read takes: it reads at least
	// one item, so a page may pass its share by one item.
	pageFloor = 1 << 20
	// hotCopyBody is the largest page body the hot listener copies.
	hotCopyBody = 64 << 10
)

// respBudget is the response budget: bytes taken by page reads, and page
// reads waiting, first come first served, for their floor.
type respBudget struct {
	size  int64
	queue time.Duration
	shed  prometheus.Counter
	held  prometheus.Gauge

	mu      sync.Mutex
	used    int64
	waiting []*budgetWaiter
}

// budgetWaiter is a page read waiting for n bytes; ready is closed once
// they are taken for it.
type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newRespBudget(size int64, queue time.Duration, shed prometheus.Counter, held prometheus.Gauge) *respBudget {
	return &respBudget{size: size, queue: queue, shed: shed, held: held}
}

// take takes want bytes, or as many as are left down to floor, and
// returns how many it took. With less than floor left, or other reads
// already waiting, it waits up to the queue time for floor bytes; past it
// it returns ErrOverloaded, and ctx's error when ctx ends first. The
// waiters are bounded by the read slots (Limits.Reads), each holding one.
func (b *respBudget) take(ctx context.Context, want, floor int64) (int64, error) {
	floor = min(floor, want, b.size)
	b.mu.Lock()
	if len(b.waiting) == 0 && b.size-b.used >= floor {
		n := min(want, b.size-b.used)
		b.used += n
		b.held.Set(float64(b.used))
		b.mu.Unlock()
		return n, nil
	}
	w := &budgetWaiter{n: floor, ready: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.mu.Unlock()

	t := time.NewTimer(b.queue)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return floor, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = ErrOverloaded
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, o := range b.waiting {
		if o == w {
			b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
			if err == ErrOverloaded {
				b.shed.Inc()
			}
			// The reads behind it may fit in what is left.
			b.wakeLocked()
			return 0, err
		}
	}
	return floor, nil // granted as the wait ended
}

// grow takes n more bytes at once, over the budget if need be: the
// memory is already in use (a page past its share by its last item).
func (b *respBudget) grow(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += n
	b.held.Set(float64(b.used))
}

// release gives back n bytes and lets in the waiters they make room for.
func (b *respBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.wakeLocked()
}

func (b *respBudget) wakeLocked() {
	for len(b.waiting) > 0 && b.size-b.used >= b.waiting[0].n {
		w := b.waiting[0]
		b.waiting = b.waiting[1:]
		b.used += w.n
		close(w.ready)
	}
	b.held.Set(float64(b.used))
}

// pageResponse is one page read's response buffer and its share of the
// budget. Handlers build the body in buffer and answer with write; done,
// deferred, gives back whatever write has not handed on.
type pageResponse struct {
	budget *respBudget
	buf    *[]byte
	// held is the share taken; maxData is the data the page may hold.
	held    int64
	maxData int
	// writeTimeout bounds the time a large body takes to write.
	writeTimeout time.Duration
}

// startPage takes a page read's share of the response budget. It returns
// a value, not a pointer, so that the hot read allocates nothing for it.
func (s *Server) startPage(r *http.Request) (pageResponse, error) {
	n, err := s.admit.budget.take(r.Context(), pageShare, pageFloor)
	if err != nil {
		return pageResponse{}, err
	}
	return pageResponse{budget: s.admit.budget, buf: getBuf(), held: n, maxData: pageData(n), writeTimeout: s.readTimeout}, nil
}

// pageData is the data a page with a share of n bytes may hold.
func pageData(n int64) int {
	if n >= pageShare {
		return MaxPageBytes
	}
	return int(max(1, (n-64<<10)/4*3))
}

// buffer is the pooled buffer to append the body to, empty.
func (p *pageResponse) buffer() []byte { return (*p.buf)[:0] }

// keep keeps b, grown from buffer, as the buffer to pool.
func (p *pageResponse) keep(b []byte) { *p.buf = b }

// done gives back the share and the buffer, unless write handed them on.
func (p *pageResponse) done() {
	if p.buf == nil {
		return
	}
	p.budget.release(p.held)
	putBuf(p.buf)
	p.buf = nil
}

// write answers with status and body (built in buffer) in one Write with its
// Content-Length. The share is trued up to the body's size first, then
// given back once the body is written. The hot listener writes after the
// handler returns: a body over hotCopyBody goes to it as it is, without a
// copy into fasthttp's own (pooled) buffer, and the share and buffer come
// back once it is written; a smaller one is copied, as any response is.
//
// A body over hotCopyBody must be written within the read timeout
// (Options.ReadTimeout, 2 minutes by default), past which its connection
// is closed: a client that stops reading would otherwise hold its share,
// and its buffer, for as long as it keeps the connection open, and a few
// such clients would hold the whole budget.
func (p *pageResponse) write(w http.ResponseWriter, status int, contentType []string, body []byte) error {
	*p.buf = body // keep the grown buffer for the pool
	if n := int64(len(body)); n > p.held {
		p.budget.grow(n - p.held)
		p.held = n
	} else {
		p.budget.release(p.held - n)
		p.held = n
	}
	h := w.Header()
	h["Content-Type"] = contentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	large := len(body) > hotCopyBody
	if hw, ok := hotWriterOf(w); ok && large {
		// fasthttp clears a deadline the handler sets once the response
		// is written.
		_ = hw.ctx.SetWriteDeadline(time.Now().Add(p.writeTimeout))
		w.WriteHeader(status)
		hw.ctx.Response.SetBodyStream(&pageBody{budget: p.budget, held: p.held, buf: p.buf, body: body}, len(body))
		p.buf = nil // the body's Close gives them back
		return nil
	}
	defer p.done()
	if large {
		rc := http.NewResponseController(w)
		if rc.SetWriteDeadline(time.Now().Add(p.writeTimeout)) == nil {
			// net/http keeps a deadline for the connection's later
			// responses; this one is for this body alone.
			defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
		}
	}
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// hotWriterOf finds the hot listener's writer under w's wrappers.
func hotWriterOf(w http.ResponseWriter) (*hotWriter, bool) {
	for {
		switch x := w.(type) {
		case *hotWriter:
			return x, true
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil, false
		}
	}
}

// pageBody is a page's body handed to the hot listener, which reads it as
// it writes the response and then closes it (also when the connection
// fails first, or the response is reset).
type pageBody struct {
	budget *respBudget
	held   int64   // the page's share
	buf    *[]byte // the pooled buffer body was built in
	body   []byte
	off    int
	once   sync.Once
}

func (b *pageBody) Read(dst []byte) (int, error) {
	if b.off >= len(b.body) {
		return 0, io.EOF
	}
	n := copy(dst, b.body[b.off:])
	b.off += n
	return n, nil
}

// WriteTo lets fasthttp write the body in one call rather than through
// its copy buffer.
func (b *pageBody) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.body[b.off:])
	b.off += n
	return int64(n), err
}

func (b *pageBody) Close() error {
	b.once.Do(func() {
		b.budget.release(b.held)
		putBuf(b.buf)
	})
	return nil
}

package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
)

// Limits bounds the requests a Server works on at once, per class, so that
// load past saturation is shed quickly with 503 and Retry-After instead of
// queueing without limit. /healthz, /readyz and /metrics are never limited.
type Limits struct {
	// Reads bounds GET requests under /v1 (admin aside). Default 256.
	Reads int
	// Writes bounds the other requests under /v1 (admin aside). Default 128.
	Writes int
	// Admin bounds requests under /v1/admin. Default 8.
	Admin int
	// Queue is how long a request waits for a slot before it is shed.
	// Default 50 ms. At most as many requests wait as their class has
	// slots; past that, a request is shed at once, without waiting.
	Queue time.Duration
}

// DefaultLimits returns the limits New applies to zero fields.
func DefaultLimits() Limits {
	return Limits{Reads: 256, Writes: 128, Admin: 8, Queue: 50 * time.Millisecond}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Reads <= 0 {
		l.Reads = d.Reads
	}
	if l.Writes <= 0 {
		l.Writes = d.Writes
	}
	if l.Admin <= 0 {
		l.Admin = d.Admin
	}
	if l.Queue <= 0 {
		l.Queue = d.Queue
	}
	return l
}

// ErrOverloaded is answered 503 with Retry-After when a class is full.
var ErrOverloaded = fmt.Errorf("%w: server overloaded; retry after a second", store.ErrUnavailable)

// admission holds one semaphore per request class.
type admission struct {
	queue   time.Duration
	classes map[string]*admitClass
}

// admitClass is one class's slots and its bounded queue of waiters.
//
// The waiters are bounded because under a flood most of them could never
// get a slot within the queue time: a class frees its slots at the rate it
// completes requests, so a waiter behind as many others as there are
// slots waits for a whole generation of requests to finish. Such a waiter
// was shed after the queue time anyway; shedding it at once answers it
// sooner, without holding its request and a timer for the wait.
type admitClass struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
	shed       prometheus.Counter
}

// Request classes, the class label of ebb_http_shed_total.
const (
	classRead  = "read"
	classWrite = "write"
	classAdmin = "admin"
)

func newAdmission(l Limits, shed *prometheus.CounterVec) *admission {
	l = l.withDefaults()
	a := &admission{queue: l.Queue, classes: map[string]*admitClass{}}
	// Every class is exported from the start, at zero, so that an alert
	// on the rate of shedding sees the first one.
	for class, n := range map[string]int{classRead: l.Reads, classWrite: l.Writes, classAdmin: l.Admin} {
		a.classes[class] = &admitClass{slots: make(chan struct{}, n), maxWaiting: int64(n), shed: shed.WithLabelValues(class)}
	}
	return a
}

func classOf(r *http.Request) string {
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/admin"):
		return classAdmin
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return classRead
	}
	return classWrite
}

// admit takes a slot of r's class, waiting at most the queue time, and
// returns the function that gives it back; or ErrOverloaded, at once when
// the class already has as many waiters as slots.
func (a *admission) admit(r *http.Request) (func(), error) {
	c := a.classes[classOf(r)]
	release := func() { <-c.slots }
	select {
	case c.slots <- struct{}{}:
		return release, nil
	default:
	}
	if c.waiting.Add(1) > c.maxWaiting {
		c.waiting.Add(-1)
		c.shed.Inc()
		return nil, ErrOverloaded
	}
	defer c.waiting.Add(-1)
	t := time.NewTimer(a.queue)
	defer t.Stop()
	select {
	case c.slots <- struct{}{}:
		return release, nil
	case <-r.Context().Done():
		return nil, r.Context().Err()
	case <-t.C:
		c.shed.Inc()
		return nil, ErrOverloaded
	}
}

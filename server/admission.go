package server

import (
	"fmt"
	"net/http"
	"strings"
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
	// Default 50 ms.
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
	queue time.Duration
	slots map[string]chan struct{}
	shed  *prometheus.CounterVec
}

// Request classes, the class label of ebb_http_shed_total.
const (
	classRead  = "read"
	classWrite = "write"
	classAdmin = "admin"
)

func newAdmission(l Limits, shed *prometheus.CounterVec) *admission {
	l = l.withDefaults()
	// Every class is exported from the start, at zero, so that an alert
	// on the rate of shedding sees the first one.
	for _, class := range []string{classRead, classWrite, classAdmin} {
		shed.WithLabelValues(class)
	}
	return &admission{queue: l.Queue, shed: shed, slots: map[string]chan struct{}{
		classRead:  make(chan struct{}, l.Reads),
		classWrite: make(chan struct{}, l.Writes),
		classAdmin: make(chan struct{}, l.Admin),
	}}
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
// returns the function that gives it back; or ErrOverloaded.
func (a *admission) admit(r *http.Request) (func(), error) {
	class := classOf(r)
	slots := a.slots[class]
	release := func() { <-slots }
	select {
	case slots <- struct{}{}:
		return release, nil
	default:
	}
	t := time.NewTimer(a.queue)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return release, nil
	case <-r.Context().Done():
		return nil, r.Context().Err()
	case <-t.C:
		a.shed.WithLabelValues(class).Inc()
		return nil, ErrOverloaded
	}
}

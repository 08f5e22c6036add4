package server

import (
	"context"
	"math/rand/v2"
	"net/http"
	runtimemetrics "runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
)

// Limits bounds the requests a Server works on at once, per class, so that
// load past saturation is shed quickly with 503 and Retry-After instead of
// queueing without limit; and, while the process has more work ready than
// its CPUs keep up with, sheds a share of reads and writes (see Runnable).
// /healthz, /readyz and /metrics are never limited.
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
	// Runnable is how many goroutines per CPU (GOMAXPROCS) may be ready to
	// run, waiting for a CPU, before the process counts as overloaded.
	// While it is, ListenAndServe sheds a growing share of new reads and
	// writes (up to 15 in 16), and lets them back in as the backlog
	// drains. Default 64: CockroachDB's admission control uses the same
	// signal with 32, and net/http runs two goroutines for each request
	// (its handler and a background read of the connection), so that 64
	// closed-loop connections per CPU are not shed; negative turns it off.
	//
	// An in-flight bound cannot do this for work that uses the CPU and
	// never waits: each such request runs to its end once it has a CPU,
	// so few are ever in flight, while every request behind it, /healthz
	// included, waits its turn in the Go scheduler's run queue.
	Runnable int
	// ResponseBytes bounds the bytes of page responses (index events,
	// list items, shared-table items) being built or written at once, for
	// the whole process, both listeners together (respbudget.go). A page
	// read takes a full page's share (about 5.6 MB) when there is room,
	// otherwise a smaller page of what is left, down to 1 MiB; below
	// that it waits up to Queue, then is answered 503 with Retry-After.
	// Default DefaultResponseBytes (64 MiB). The items a page reads
	// before encoding come on top, up to three quarters as much again.
	ResponseBytes int64
}

// DefaultLimits returns the limits New applies to zero fields.
func DefaultLimits() Limits {
	return Limits{Reads: 256, Writes: 128, Admin: 8, Queue: 50 * time.Millisecond, Runnable: 64, ResponseBytes: DefaultResponseBytes}
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
	if l.Runnable == 0 {
		l.Runnable = d.Runnable
	}
	if l.ResponseBytes <= 0 {
		l.ResponseBytes = d.ResponseBytes
	}
	return l
}

// ErrOverloaded is answered 503 with Retry-After when a class is full.
var ErrOverloaded = store.Errorf(store.ErrUnavailable, "server overloaded; retry after a second")

// admission holds one semaphore per request class, the CPU guard and the
// response budget.
type admission struct {
	queue   time.Duration
	classes map[string]*admitClass
	cpu     cpuGuard
	budget  *respBudget
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
	shed       prometheus.Counter // past the bound
	cpuShed    prometheus.Counter // by the CPU guard
}

// Request classes, the class label of ebb_http_shed_total; its reason
// label is shedLimit (the class was full), shedCPU (the CPU guard) or
// shedMemory (the response budget, for page reads).
const (
	classRead  = "read"
	classWrite = "write"
	classAdmin = "admin"

	shedLimit  = "limit"
	shedCPU    = "cpu"
	shedMemory = "memory"
)

func newAdmission(l Limits, shed *prometheus.CounterVec, cpuShedRatio, responseBytes prometheus.Gauge) *admission {
	l = l.withDefaults()
	a := &admission{queue: l.Queue, classes: map[string]*admitClass{}, cpu: cpuGuard{perCPU: l.Runnable, gauge: cpuShedRatio},
		budget: newRespBudget(l.ResponseBytes, l.Queue, shed.WithLabelValues(classRead, shedMemory), responseBytes)}
	// Every class is exported from the start, at zero, so that an alert
	// on the rate of shedding sees the first one.
	for class, n := range map[string]int{classRead: l.Reads, classWrite: l.Writes, classAdmin: l.Admin} {
		a.classes[class] = &admitClass{
			slots: make(chan struct{}, n), maxWaiting: int64(n),
			shed: shed.WithLabelValues(class, shedLimit), cpuShed: shed.WithLabelValues(class, shedCPU),
		}
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
	class := classOf(r)
	c := a.classes[class]
	if class != classAdmin && a.cpu.refuse() {
		c.cpuShed.Inc()
		return nil, ErrOverloaded
	}
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

// cpuGuard sheds a share of reads and writes while the process has more
// goroutines ready to run than its CPUs keep up with, read from the Go
// runtime (/sched/goroutines/runnable:goroutines) every millisecond while
// the backlog is over a quarter of the threshold or requests are being
// shed, every 20 ms otherwise. Each sample over the threshold raises the share
// shed by 1/16, up to 15/16; each at or under half of it lowers the share
// by 1/32. Shedding a request costs a fraction of serving it, so the
// backlog drains, and a request that is let in, or a probe of /healthz,
// waits behind a short run queue instead of behind every request read.
type cpuGuard struct {
	perCPU int // the threshold, runnable goroutines per CPU; ≤ 0: off
	// share is the share of new reads and writes shed, in 1/shedScale.
	share atomic.Uint32
	gauge prometheus.Gauge
}

const (
	shedScale = 1 << 10
	shedMax   = shedScale * 15 / 16
	shedUp    = shedScale / 16
	shedDown  = shedScale / 32

	// guardBusy and guardIdle are the sampling intervals with and without
	// a backlog or shedding.
	guardBusy = time.Millisecond
	guardIdle = 20 * time.Millisecond
)

// refuse decides whether to shed one new read or write.
func (g *cpuGuard) refuse() bool {
	s := g.share.Load()
	return s != 0 && rand.Uint32N(shedScale) < s
}

// observe takes one sample: runnable goroutines and the CPUs (GOMAXPROCS)
// to run them.
func (g *cpuGuard) observe(runnable, cpus int) {
	if g.perCPU <= 0 {
		return
	}
	s := g.share.Load()
	switch limit := g.perCPU * cpus; {
	case runnable > limit:
		s = min(shedMax, s+shedUp)
	case runnable <= limit/2:
		s -= min(s, shedDown)
	}
	g.share.Store(s)
	g.gauge.Set(float64(s) / shedScale)
}

// run samples the runtime until ctx is done. It returns at once when the
// guard is off or the runtime does not report runnable goroutines.
func (g *cpuGuard) run(ctx context.Context) {
	samples := []runtimemetrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}, {Name: "/sched/gomaxprocs:threads"}}
	runtimemetrics.Read(samples)
	if g.perCPU <= 0 || samples[0].Value.Kind() != runtimemetrics.KindUint64 || samples[1].Value.Kind() != runtimemetrics.KindUint64 {
		return
	}
	t := time.NewTimer(guardIdle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		runtimemetrics.Read(samples)
		runnable, cpus := int(samples[0].Value.Uint64()), int(samples[1].Value.Uint64())
		g.observe(runnable, cpus)
		next := guardIdle
		if runnable > g.perCPU*cpus/4 || g.share.Load() != 0 {
			next = guardBusy
		}
		t.Reset(next)
	}
}

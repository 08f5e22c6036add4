package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value reads a gauge's or a counter's value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if g := out.GetGauge(); g != nil {
		return g.GetValue()
	}
	return out.GetCounter().GetValue()
}

// TestCPUGuardShedsAndRecovers drives the CPU guard with samples of the run
// queue, as ListenAndServe's sampler feeds it: over the threshold it sheds
// a growing share of reads and writes, never admin requests; between half
// the threshold and the threshold it holds the share; at or under half it
// lets requests back in, until none is shed.
func TestCPUGuardShedsAndRecovers(t *testing.T) {
	m := newMetrics()
	a := newAdmission(Limits{}, m.shed, m.cpuShedRatio, m.responseBytes)
	const cpus = 2
	limit := DefaultLimits().Runnable * cpus
	read := httptest.NewRequest("GET", "/v1/indexes/x/events?index_id=a", nil)
	write := httptest.NewRequest("POST", "/v1/indexes/x/events", nil)
	admin := httptest.NewRequest("GET", "/v1/admin/usage", nil)

	// shed sends n requests like r, each released at once, and returns how
	// many were shed.
	shed := func(r *http.Request, n int) int {
		refused := 0
		for range n {
			release, err := a.admit(r)
			switch {
			case errors.Is(err, ErrOverloaded):
				refused++
			case err != nil:
				t.Fatal(err)
			default:
				release()
			}
		}
		return refused
	}
	if n := shed(read, 1000); n != 0 {
		t.Fatalf("%d of 1000 reads shed with no backlog", n)
	}

	// One sample over the threshold sheds 1/16; sixteen more reach 15/16.
	a.cpu.observe(limit+1, cpus)
	if got := value(t, m.cpuShedRatio); got != 1.0/16 {
		t.Fatalf("share shed after one sample over the threshold: %v, want 1/16", got)
	}
	for range 16 {
		a.cpu.observe(10*limit, cpus)
	}
	if got := value(t, m.cpuShedRatio); got != 15.0/16 {
		t.Fatalf("share shed after a long overload: %v, want 15/16", got)
	}
	const n = 4000
	for _, r := range []*http.Request{read, write} {
		got := float64(shed(r, n)) / n
		if got < 0.9 || got > 0.97 {
			t.Errorf("%s %s: %.3f shed at a share of 15/16", r.Method, r.URL.Path, got)
		}
	}
	if k := shed(admin, 100); k != 0 {
		t.Errorf("%d admin requests shed for the CPU: the operator's requests must get through", k)
	}
	if got := value(t, m.shed.WithLabelValues(classRead, shedCPU)); got < 0.9*n {
		t.Errorf(`ebb_http_shed_total{class="read",reason="cpu"} = %v after shedding about %d`, got, int(0.94*n))
	}
	if got := value(t, m.shed.WithLabelValues(classRead, shedLimit)); got != 0 {
		t.Errorf(`ebb_http_shed_total{class="read",reason="limit"} = %v: no read was past its bound`, got)
	}

	// Between half the threshold and the threshold, the share holds.
	a.cpu.observe(limit, cpus)
	a.cpu.observe(limit/2+1, cpus)
	if got := value(t, m.cpuShedRatio); got != 15.0/16 {
		t.Fatalf("share shed within the hysteresis band: %v, want it held at 15/16", got)
	}
	// At half, it falls by 1/32 a sample: 30 samples bring it to nothing.
	a.cpu.observe(limit/2, cpus)
	if got := value(t, m.cpuShedRatio); got != 15.0/16-1.0/32 {
		t.Fatalf("share shed after one calm sample: %v, want 15/16 - 1/32", got)
	}
	for range 29 {
		a.cpu.observe(0, cpus)
	}
	if got := value(t, m.cpuShedRatio); got != 0 {
		t.Fatalf("share shed after the backlog drained: %v, want 0", got)
	}
	if k := shed(read, 1000); k != 0 {
		t.Fatalf("%d of 1000 reads shed after the backlog drained", k)
	}
}

// TestCPUGuardOff: a negative Runnable turns the guard off; its sampler
// returns at once and it never sheds.
func TestCPUGuardOff(t *testing.T) {
	a := newAdmission(Limits{Runnable: -1}, newMetrics().shed, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), prometheus.NewGauge(prometheus.GaugeOpts{Name: "y"}))
	done := make(chan struct{})
	go func() { defer close(done); a.cpu.run(t.Context()) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sampler of a guard turned off did not return")
	}
	for range 100 {
		a.cpu.observe(1<<20, 1)
	}
	if a.cpu.refuse() {
		t.Fatal("a guard turned off shed a request")
	}
}

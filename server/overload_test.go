package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/server"
)

// TestFloodIsShed floods event ingest on the embedded store with many more
// concurrent writers than the write bound admits, with /healthz probed
// beside, and checks the qualitative promise of docs/operations.md
// ("Overload"): some writes are shed with 503 unavailable and Retry-After,
// quickly; every write admitted succeeds; /healthz is answered throughout,
// and fast. bench/overload/run.sh measures the same thing with figures.
func TestFloodIsShed(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Dir: filepath.Join(t.TempDir(), "data"), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	const queue = 5 * time.Millisecond
	ts, _ := start(t, server.Options{DB: db, Limits: server.Limits{Writes: 2, Queue: queue}})
	if r := call(t, "PUT", ts.URL+"/v1/indexes/flood", "", strings.NewReader(`{"table_bucket":"24h","partition_bucket":"1h","retention":"168h"}`)); r.status != 201 {
		t.Fatalf("create index: %d %s", r.status, r.body)
	}
	const writers = 32
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers + 1}}
	t.Cleanup(client.CloseIdleConnections)

	type outcome struct {
		status     int
		retryAfter string
		took       time.Duration
		body       string
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
	)
	stop := time.Now().Add(1500 * time.Millisecond)
	ts0 := time.Now().UTC().Add(-time.Hour)
	for w := range writers {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				var b strings.Builder
				b.WriteString(`{"events":[`)
				for e := range 10 {
					if e > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"index_id":"w%d","event_id":"e%d-%d","timestamp":%q,"payload":"aGVsbG8="}`,
						w, n, e, ts0.Add(time.Duration(n)*time.Millisecond).Format(time.RFC3339Nano))
				}
				b.WriteString(`]}`)
				began := time.Now()
				resp, err := client.Post(ts.URL+"/v1/indexes/flood/events", "application/json", strings.NewReader(b.String()))
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				o := outcome{resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(began), string(body)}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
				if o.status == http.StatusServiceUnavailable {
					// A client that retries at once, with far less than
					// the second Retry-After asks for: still a flood,
					// without spending the test's CPU on the loop alone.
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	var probes []time.Duration
	for time.Now().Before(stop) {
		began := time.Now()
		resp, err := client.Get(ts.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/healthz under the flood: %d", resp.StatusCode)
		}
		probes = append(probes, time.Since(began))
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()

	var ok, shed int
	var shedTook []time.Duration
	for _, o := range outcomes {
		switch o.status {
		case http.StatusOK:
			if !strings.Contains(o.body, `"written":10`) {
				t.Fatalf("admitted write answered %s", o.body)
			}
			ok++
		case http.StatusServiceUnavailable:
			if o.retryAfter != "1" || !strings.Contains(o.body, `"unavailable"`) {
				t.Fatalf("shed write: Retry-After %q, body %s", o.retryAfter, o.body)
			}
			shed++
			shedTook = append(shedTook, o.took)
		default:
			t.Fatalf("write under the flood: %d %s", o.status, o.body)
		}
	}
	t.Logf("%d writes admitted, %d shed; /healthz median %v, max %v over %d probes",
		ok, shed, median(probes), slices.Max(probes), len(probes))
	if ok == 0 || shed == 0 {
		t.Fatalf("%d writes admitted and %d shed: want some of each from %d writers over 2 slots", ok, shed, writers)
	}
	// Shedding answers after the queue wait, not after the writes ahead.
	// The bounds are loose, for the race detector on a busy machine.
	if m := median(shedTook); m > 250*time.Millisecond {
		t.Errorf("a shed write took %v (median) to be answered; the queue wait is %v", m, queue)
	}
	if m := median(probes); m > 250*time.Millisecond {
		t.Errorf("/healthz took %v (median) under the flood", m)
	}
	if m := slices.Max(probes); m > 2*time.Second {
		t.Errorf("/healthz took up to %v under the flood", m)
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestWaitersAreBounded: with a class's slots taken and as many requests
// waiting for one as it has slots, the next is shed at once rather than
// after the queue time, and the waiters still get the slots freed.
func TestWaitersAreBounded(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan struct{}, 4)
	// A queue time far past the test's deadlines: a request shed in time
	// was shed without waiting for a slot.
	ts, _ := start(t, server.Options{Features: []server.Feature{blockingFeature(entered, hold)}, Limits: server.Limits{Writes: 2, Queue: time.Hour}})
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	type result struct {
		status     int
		retryAfter string
		err        error
	}
	post := func(out chan<- result) {
		resp, err := client.Post(ts.URL+"/v1/block", "application/json", nil)
		if err != nil {
			out <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out <- result{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	}
	admitted := make(chan result, 2)
	for range 2 {
		go post(admitted)
	}
	<-entered
	<-entered
	// Two waiters and one request too many, in whatever order they
	// arrive: one of the three is shed.
	rest := make(chan result, 3)
	for range 3 {
		go post(rest)
	}
	select {
	case r := <-rest:
		if r.err != nil || r.status != http.StatusServiceUnavailable || r.retryAfter != "1" {
			close(hold)
			t.Fatalf("a request past the slots and the waiters: %d Retry-After %q, %v", r.status, r.retryAfter, r.err)
		}
	case <-time.After(10 * time.Second):
		close(hold)
		t.Fatal("a request past the slots and the waiters was not shed within 10s: it was queued")
	}
	close(hold)
	for _, ch := range []chan result{admitted, admitted, rest, rest} {
		if r := <-ch; r.err != nil || r.status != http.StatusOK {
			t.Fatalf("a request admitted or waiting: %d %v", r.status, r.err)
		}
	}
}

// TestCPUOverloadIsShed runs the server as ebb serve does (ListenAndServe,
// which runs the CPU guard) and makes the process CPU-bound: far more
// goroutines ready to run than the CPUs can run soon, as a flood of
// requests that use the CPU makes them. While it lasts, reads are shed in
// part with 503 and Retry-After, ebb_http_cpu_shed_ratio is above zero,
// and /healthz is never refused; once the backlog is gone, every read is
// admitted again.
func TestCPUOverloadIsShed(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv, err := server.New(server.Options{Registerer: reg, Features: []server.Feature{blockingFeature(nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- srv.ListenAndServe(ctx, "127.0.0.1:0", 5*time.Second, func(url string) { ready <- url })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	url := <-ready
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	get := func(path string) (int, string) {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	if code, _ := get("/v1/quick"); code != http.StatusOK {
		t.Fatalf("a read before the overload: %d", code)
	}

	// The backlog: runnable goroutines four times the default threshold,
	// each yielding in a loop so that it stays runnable.
	stop := make(chan struct{})
	var spin sync.WaitGroup
	// endSpin stops them; the cleanup does too when the test fails first.
	endSpin := sync.OnceFunc(func() { close(stop); spin.Wait() })
	t.Cleanup(endSpin)
	for range 4 * server.DefaultLimits().Runnable * runtime.GOMAXPROCS(0) {
		spin.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		})
	}
	shed, sawRatio := 0, false
	deadline := time.Now().Add(20 * time.Second)
	for shed == 0 || !sawRatio {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s of CPU overload: %d reads shed, ebb_http_cpu_shed_ratio above zero: %v", shed, sawRatio)
		}
		code, retry := get("/v1/quick")
		switch code {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			if retry != "1" {
				t.Errorf("a read shed for the CPU has Retry-After %q", retry)
			}
			shed++
		default:
			t.Fatalf("a read under CPU overload: %d", code)
		}
		if code, _ := get("/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz under CPU overload: %d", code)
		}
		sawRatio = sawRatio || gaugeValue(t, reg, "ebb_http_cpu_shed_ratio") > 0
	}
	endSpin()

	// The backlog gone, the share shed falls to zero within a second or
	// so; give it ten.
	deadline = time.Now().Add(10 * time.Second)
	for gaugeValue(t, reg, "ebb_http_cpu_shed_ratio") > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ebb_http_cpu_shed_ratio still %v 10 s after the overload ended", gaugeValue(t, reg, "ebb_http_cpu_shed_ratio"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 100 {
		if code, _ := get("/v1/quick"); code != http.StatusOK {
			t.Fatalf("a read after the overload ended: %d", code)
		}
	}
}

// gaugeValue reads a gauge without labels from reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not exported", name)
	return 0
}

package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestResponseBudget: page reads share one budget of response bytes. With
// room for less than a full page, a read gets a shorter page with a token
// (following the tokens still returns every item, once, in order); with
// less than the least share left, it waits briefly for one, and past the
// queue time it is answered 503 with Retry-After, counted as shed for
// memory.
func TestResponseBudget(t *testing.T) {
	const budget = 3 << 20
	const n, size = 80, 64 << 10
	s, reg, base := startBudgetLists(t, server.Limits{ResponseBytes: budget, Queue: 100 * time.Millisecond}, 0, n, size)
	path := listItemsPath("user", "big", "_", "u1") + "?limit=1000"

	// A full page (4 MiB of data) does not fit: pages hold at most what
	// the budget does, and still add up to every item.
	next := n - 1
	pages, items := followPages(t, base, path, size, func(b []byte) (int, int, string) {
		if len(b) > budget+size*4/3+1024 {
			t.Fatalf("a page of %d bytes under a budget of %d", len(b), budget)
		}
		var p struct {
			Items []struct {
				Value []byte `json:"value"`
			} `json:"items"`
			NextPageToken string `json:"next_page_token"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if len(it.Value) != size || it.Value[0] != byte(next) {
				t.Fatalf("item %d: value of %d bytes starting %d", next, len(it.Value), it.Value[0])
			}
			next--
		}
		return len(p.Items), len(p.Items) * size, p.NextPageToken
	})
	if items != n || pages < 3 {
		t.Fatalf("%d items in %d pages, want %d in at least 3", items, pages, n)
	}

	// With the budget held by other responses, a read waits for its
	// share, then is shed.
	release := server.HoldResponseBudget(t, s, budget)
	r := call(t, "GET", base+path, "", nil)
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != server.CodeUnavailable || r.header.Get("Retry-After") != "1" {
		t.Fatalf("read with the budget spent: %d %q Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
	}
	if got := metricValue(t, reg, "ebb_http_response_budget_bytes", nil); got != budget {
		t.Fatalf("ebb_http_response_budget_bytes %v while the budget is held, want %d", got, budget)
	}
	if got := metricValue(t, reg, "ebb_http_shed_total", map[string]string{"class": "read", "reason": "memory"}); got != 1 {
		t.Fatalf("reads shed for memory: %v, want 1", got)
	}

	// A read that finds the budget spent gets its share as soon as it is
	// given back, within the queue time.
	done := make(chan response, 1)
	go func() { done <- call(t, "GET", base+path, "", nil) }()
	time.Sleep(20 * time.Millisecond)
	release()
	if r := <-done; r.status != http.StatusOK {
		t.Fatalf("read once the budget is back: %d %s", r.status, r.body)
	}
	// Every share has been given back (the hot listener gives a page's
	// back once it has written it).
	deadline := time.Now().Add(5 * time.Second)
	for metricValue(t, reg, "ebb_http_response_budget_bytes", nil) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ebb_http_response_budget_bytes %v once every read is answered, want 0", metricValue(t, reg, "ebb_http_response_budget_bytes", nil))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startBudgetLists serves a list of n values of size bytes (under
// /v1/lists/user/big/_/u1) with limits and readTimeout, on the listener
// the tests run on, and returns the server, its metrics and its URL.
func startBudgetLists(t *testing.T, limits server.Limits, readTimeout time.Duration, n, size int) (*server.Server, *prometheus.Registry, string) {
	t.Helper()
	clock := storetest.NewClock(listsStart)
	st := testbackend.Pebble(t, clock.Now)
	svc, err := lists.New(t.Context(), st, lists.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, _ := newServer(t, server.Options{Now: clock.Now, Registerer: reg, Features: []server.Feature{server.Lists(svc)},
		Limits: limits, ReadTimeout: readTimeout})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	base := ts.URL
	if onHot(t) {
		base = server.ServeHot(t, s)
	}
	srv := &listsServer{url: base, clock: clock}
	if r := srv.do(t, "PUT", listFeaturePath("user", "big", "_"), "", map[string]string{"ttl": "720h"}); r.status != http.StatusCreated {
		t.Fatalf("create feature: %d %s", r.status, r.body)
	}
	for i := 0; i < n; i += 20 {
		var items []map[string]string
		for j := i; j < min(n, i+20); j++ {
			items = append(items, map[string]string{"value": b64(string(bytes.Repeat([]byte{byte(j)}, size))),
				"timestamp": listsStart.Add(time.Duration(j) * time.Second).Format(time.RFC3339)})
		}
		if r := srv.do(t, "POST", listItemsPath("user", "big", "_", "u1"), "", map[string]any{"items": items}); r.status != http.StatusOK {
			t.Fatalf("add: %d %s", r.status, r.body)
		}
	}
	return s, reg, base
}

// TestStalledReaderGivesBackItsShare: a client that asks for a large page
// and stops reading holds the page's share of the response budget only
// until the write times out (the read timeout), not for as long as it
// keeps its connection open.
func TestStalledReaderGivesBackItsShare(t *testing.T) {
	_, reg, base := startBudgetLists(t, server.Limits{}, time.Second, 100, 64<<10)
	// A receive buffer of a few KiB, and nothing read: the 5.6 MB page
	// fills it and the server's send buffer (at most 4 MiB), and the
	// server's write stalls.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET %s?limit=1000 HTTP/1.1\r\nHost: x\r\n\r\n", listItemsPath("user", "big", "_", "u1")); err != nil {
		t.Fatal(err)
	}
	held := func() float64 { return metricValue(t, reg, "ebb_http_response_budget_bytes", nil) }
	deadline := time.Now().Add(5 * time.Second)
	for held() < 4<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled page holds %v bytes of the budget, want over 4 MiB", held())
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	for held() != 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("a reader stalled for %v still holds %v bytes of the response budget", time.Since(start).Round(time.Second), held())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the stalled page's share came back after %v", time.Since(start).Round(10*time.Millisecond))
}

// metricValue returns the value of the gauge or counter name whose
// labels include labels.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				if !found {
					continue metrics
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s with %v", name, labels)
	return 0
}

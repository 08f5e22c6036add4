package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestKeptListPages: the second of two equal list reads is answered from
// the page kept by the first, in either encoding, and a write to the list,
// an item's expiry or a TTL change makes the next read go to the store; a
// request without the scope is refused whatever is kept; with
// ListCacheBytes negative nothing is kept.
func TestKeptListPages(t *testing.T) {
	for _, keep := range []bool{true, false} {
		clock := storetest.NewClock(listsStart)
		st := testbackend.Pebble(t, clock.Now)
		svc, err := lists.New(context.Background(), st, lists.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		opts := server.Options{Admin: adminFor(t, st, clock.Now), Now: clock.Now, Registerer: reg, Features: []server.Feature{server.Lists(svc)},
			Auth: loadAuth(t, `tokens:
  - token: users
    scopes: ["list:user"]
  - token: others
    scopes: ["list:other"]
`)}
		if !keep {
			opts.ListCacheBytes = -1
		}
		ts, _ := start(t, opts)
		e := &listsServer{url: ts.URL, clock: clock}
		pages := func(source string) float64 {
			return metricValue(t, reg, "ebb_http_list_pages_total", map[string]string{"source": source})
		}
		fp := listFeaturePath("user", "stories", "_")
		ip := listItemsPath("user", "stories", "_", "alice")
		listsExpect(t, "create", e.do(t, "PUT", fp, "users", `{"ttl":"1h"}`), http.StatusCreated, "")
		add := func(value string, ts time.Time) {
			t.Helper()
			listsExpect(t, "add", e.do(t, "POST", ip, "users", map[string]any{"items": []map[string]string{{"value": b64(value), "timestamp": ts.Format(time.RFC3339Nano)}}}), http.StatusOK, "")
		}
		get := func(query string, headers ...string) response {
			t.Helper()
			r := call(t, "GET", e.url+ip+query, "users", nil, headers...)
			listsExpect(t, "get", r, http.StatusOK, "")
			return r
		}
		add("a", listsStart.Add(-30*time.Minute))
		add("b", listsStart.Add(-10*time.Minute))

		first, second := get("?limit=10"), get("?limit=10")
		m1, m2 := get("?limit=10", "Accept: application/msgpack"), get("?limit=10", "Accept: application/msgpack")
		if string(first.body) != string(second.body) || string(m1.body) != string(m2.body) || string(first.body) == string(m1.body) {
			t.Fatalf("kept %v: JSON %q then %q; MessagePack %q then %q", keep, first.body, second.body, m1.body, m2.body)
		}
		for _, r := range []response{second, m2} {
			if r.header.Get("Vary") != "Accept" || r.header.Get("Content-Length") == "" {
				t.Fatalf("kept %v: headers %v", keep, r.header)
			}
		}
		if m2.header.Get("Content-Type") != m1.header.Get("Content-Type") || second.header.Get("Content-Type") != "application/json" {
			t.Fatalf("kept %v: Content-Type %q, %q", keep, second.header.Get("Content-Type"), m2.header.Get("Content-Type"))
		}
		if !keep {
			if pages("kept")+pages("read") != 0 {
				t.Fatalf("nothing kept, yet pages counted: kept %v read %v", pages("kept"), pages("read"))
			}
			continue
		}
		if pages("kept") != 2 || pages("read") != 2 {
			t.Fatalf("after two reads in each encoding: kept %v, read %v; want 2 and 2", pages("kept"), pages("read"))
		}

		// Refused without the scope, although the page is kept.
		listsExpect(t, "other scope", call(t, "GET", e.url+ip+"?limit=10", "others", nil), http.StatusForbidden, "permission_denied")

		// A write: the next read sees it.
		add("c", listsStart.Add(-time.Minute))
		if got := e.getListAs(t, ip, "?limit=10", "users"); !slices.Equal(got, []string{
			"c@" + listsStart.Add(-time.Minute).Format(time.RFC3339), "b@" + listsStart.Add(-10*time.Minute).Format(time.RFC3339), "a@" + listsStart.Add(-30*time.Minute).Format(time.RFC3339)}) {
			t.Fatalf("after an add: %v", got)
		}
		// a expires at listsStart+30m to the nanosecond.
		e.clock.Set(listsStart.Add(30*time.Minute - time.Nanosecond))
		if got := e.getListAs(t, ip, "?limit=10", "users"); len(got) != 3 {
			t.Fatalf("a nanosecond before a's expiry: %v", got)
		}
		kept := pages("kept")
		e.clock.Set(listsStart.Add(30 * time.Minute))
		if got := e.getListAs(t, ip, "?limit=10", "users"); len(got) != 2 {
			t.Fatalf("at a's expiry: %v", got)
		}
		if pages("kept") != kept {
			t.Fatal("the read at an item's expiry was answered from a kept page")
		}
		// A shorter TTL applies to items added from then on, but the
		// feature reads otherwise: no page kept before is given.
		e.getListAs(t, ip, "?limit=10", "users")
		kept = pages("kept")
		listsExpect(t, "shorten", e.do(t, "PUT", fp, "users", `{"ttl":"45m"}`), http.StatusOK, "")
		e.getListAs(t, ip, "?limit=10", "users")
		if pages("kept") != kept {
			t.Fatal("a page kept before a TTL change was given after it")
		}
	}
}

// TestKeptPagesSeeAcknowledgedWrites: with readers reading a list all the
// while (so that pages are kept and given constantly), every read that
// starts after an add was acknowledged sees the item added.
func TestKeptPagesSeeAcknowledgedWrites(t *testing.T) {
	st := testbackend.Pebble(t, nil)
	svc, err := lists.New(context.Background(), st, lists.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, time.Now), Registerer: reg, Features: []server.Feature{server.Lists(svc)}})
	e := &listsServer{url: ts.URL}
	ip := listItemsPath("user", "stories", "_", "alice")
	listsExpect(t, "create", e.do(t, "PUT", listFeaturePath("user", "stories", "_"), "", `{"ttl":"1h"}`), http.StatusCreated, "")
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	var acked atomic.Int64 // items acknowledged so far
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			client := &http.Client{}
			for !stop.Load() {
				want := acked.Load()
				resp, err := client.Get(e.url + ip + "?limit=1")
				if err != nil {
					errs <- err
					return
				}
				var body listItemsBody
				err = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				var got int64
				if len(body.Items) == 1 {
					ts, err := time.Parse(time.RFC3339Nano, body.Items[0].Timestamp)
					if err != nil {
						errs <- err
						return
					}
					got = int64(ts.Sub(base)/time.Millisecond) + 1
				}
				if got < want {
					errs <- fmt.Errorf("a read begun after item %d was acknowledged saw only %d", want, got)
					return
				}
			}
		})
	}
	for i := range int64(300) {
		// Item i+1 is the newest: base + i ms.
		r := e.do(t, "POST", ip, "", map[string]any{"items": []map[string]string{{"value": b64("v"), "timestamp": base.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)}}})
		listsExpect(t, "add", r, http.StatusOK, "")
		acked.Store(i + 1)
		time.Sleep(200 * time.Microsecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if kept := metricValue(t, reg, "ebb_http_list_pages_total", map[string]string{"source": "kept"}); kept == 0 {
		t.Fatal("no read was answered from a kept page: the test checked nothing")
	} else {
		t.Logf("%v reads from kept pages, %v from the store", kept, metricValue(t, reg, "ebb_http_list_pages_total", map[string]string{"source": "read"}))
	}
}

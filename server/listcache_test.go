package server_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"slices"
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

// getListAs is getList with a token.
func (e *listsServer) getListAs(t *testing.T, path, query, token string) []string {
	t.Helper()
	r := call(t, "GET", e.url+path+query, token, nil)
	listsExpect(t, "get "+path+query, r, http.StatusOK, "")
	var out []string
	for _, it := range listsDecode[listItemsBody](t, r).Items {
		v, err := base64.StdEncoding.DecodeString(it.Value)
		if err != nil {
			t.Fatalf("value %q: %v", it.Value, err)
		}
		out = append(out, string(v)+"@"+it.Timestamp)
	}
	return out
}

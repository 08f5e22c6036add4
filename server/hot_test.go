package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/server"
)

// listening is a Server run by ListenAndServe with a hot listener.
type listening struct {
	srv    *server.Server
	main   string // the main listener's URL
	cancel context.CancelFunc
	served chan error // ListenAndServe's result
}

// serveBoth runs ListenAndServe, draining for drain, with a hot listener
// and features over a fresh embedded DB; the test's end shuts it down.
func serveBoth(t *testing.T, drain time.Duration, features ...server.Feature) *listening {
	t.Helper()
	db, err := ebb.Open(t.Context(), ebb.Options{Dir: filepath.Join(t.TempDir(), "data"), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	srv, _ := newServer(t, server.Options{DB: db, Registerer: prometheus.NewRegistry(), HotAddr: "127.0.0.1:0", Features: features})
	ctx, cancel := context.WithCancel(context.Background())
	l := &listening{srv: srv, cancel: cancel, served: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() { l.served <- srv.ListenAndServe(ctx, "127.0.0.1:0", drain, func(u string) { ready <- u }) }()
	l.main = <-ready
	t.Cleanup(func() {
		cancel()
		if err := <-l.served; err != nil { // put back by a test that waited on it
			t.Errorf("ListenAndServe: %v", err)
		}
	})
	if hot := srv.HotURL(); hot == "" || hot == l.main {
		t.Fatalf("hot listener URL %q (main %q)", hot, l.main)
	}
	return l
}

// do sends one request with the given headers ("Name: value").
func do(t *testing.T, method, url, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	return call(t, method, url, "", rd, headers...)
}

// TestHotListenerAnswersAsMain: ebb serve with --hot-addr answers every
// kind of request on the hot listener with the status, headers and body
// the main listener gives, and keeps the names it was sent intact once
// fasthttp has reused its buffers for later requests.
func TestHotListenerAnswersAsMain(t *testing.T) {
	l := serveBoth(t, 5*time.Second)
	mainURL, hotURL := l.main, l.srv.HotURL()

	// Written through the hot listener, over one kept-alive connection:
	// 40 list features, then 200 items in one list.
	var names []string
	for i := range 40 {
		name := fmt.Sprintf("feature-%02d-%s", i, strings.Repeat(string(rune('a'+i%26)), i%7+1))
		names = append(names, name)
		if r := do(t, "PUT", hotURL+"/v1/list-features/user/"+name+"/_", `{"ttl":"720h"}`); r.status != 201 {
			t.Fatalf("put feature %s: %d %s", name, r.status, r.body)
		}
	}
	var items strings.Builder
	items.WriteString(`{"items":[`)
	now := time.Now().UTC().Truncate(time.Second)
	for i := range 200 {
		if i > 0 {
			items.WriteByte(',')
		}
		fmt.Fprintf(&items, `{"value":"%s","timestamp":"%s"}`,
			"aXRlbS0"+fmt.Sprint(i%10), now.Add(-time.Duration(i)*time.Second).Format(time.RFC3339))
	}
	items.WriteString(`]}`)
	list := "/v1/lists/user/" + names[3] + "/_/user-1/items"
	if r := do(t, "POST", hotURL+list, items.String(), "Content-Type: application/json"); r.status != 200 {
		t.Fatalf("add items: %d %s", r.status, r.body)
	}

	// Every name arrived intact, read back through the main listener.
	all := do(t, "GET", mainURL+"/v1/list-features/user", "")
	for _, name := range names {
		if !bytes.Contains(all.body, []byte(`"feature":"`+name+`"`)) {
			t.Errorf("feature %s is missing or garbled in %s", name, all.body)
		}
	}

	// The same requests on both listeners get the same answers.
	cases := []struct {
		method, path, body string
		headers            []string
	}{
		{"GET", list + "?limit=100", "", nil},
		{"GET", list + "?limit=100", "", []string{"Accept: application/msgpack"}},
		{"GET", list + "?limit=50&page_token=", "", nil},
		{"GET", list + "?limt=5", "", nil},                                    // unknown parameter
		{"GET", list + "?limit=5&limit=6", "", nil},                           // given twice
		{"GET", "/v1/lists/user/" + names[3] + "/_/user-1/../items", "", nil}, // dot segment
		{"GET", "/v1/no/such/route", "", nil},
		{"PATCH", list, "", nil}, // 405 with Allow
		{"POST", list, `{"items":[{"value":"eA==","timestamp":"2026-01-01T00:00:00Z","extra":1}]}`, nil},
		{"POST", list, `{"items":`, nil},
		{"GET", "/v1/list-features/user/" + names[0] + "/_", "", nil},
		{"GET", "/v1/list-features/user/nope/_", "", nil},
		{"GET", "/healthz", "", nil},
		{"GET", "/readyz", "", nil},
		{"HEAD", list, "", nil},
	}
	for _, c := range cases {
		m := do(t, c.method, mainURL+c.path, c.body, c.headers...)
		h := do(t, c.method, hotURL+c.path, c.body, c.headers...)
		what := c.method + " " + c.path + " " + strings.Join(c.headers, ",")
		if m.status != h.status || !bytes.Equal(m.body, h.body) {
			t.Errorf("%s:\nmain %d %s\nhot  %d %s", what, m.status, m.body, h.status, h.body)
		}
		for _, k := range []string{"Content-Type", "Content-Length", "Vary", "Allow", "Retry-After", "Www-Authenticate", "Location"} {
			if m.header.Get(k) != h.header.Get(k) {
				t.Errorf("%s: header %s: main %q, hot %q", what, k, m.header.Get(k), h.header.Get(k))
			}
		}
		if h.header.Get("Server") != "" {
			t.Errorf("%s: the hot listener names its server: %q", what, h.header.Get("Server"))
		}
	}

	// Requests http.Client does not send, written raw: the same status
	// on both listeners.
	for _, raw := range []string{
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /healthz HTTP/1.0\r\n\r\n",
		"GET /v1/%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /healthz?x=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		if m, h := rawStatus(t, mainURL, raw), rawStatus(t, hotURL, raw); m != h {
			t.Errorf("%q: main %s, hot %s", raw, m, h)
		}
	}

	// A body past the bound: the same 413 too_large on both listeners.
	big := `{"items":[{"value":"` + strings.Repeat("A", server.MaxBodyBytes) + `","timestamp":"2026-01-01T00:00:00Z"}]}`
	for _, u := range []string{mainURL, hotURL} {
		r := do(t, "POST", u+list, big)
		if r.status != 413 || r.errorCode(t) != server.CodeTooLarge {
			t.Errorf("%s: oversize body answered %d %s", u, r.status, r.body)
		}
	}

	// Requests on the hot listener are counted like the main listener's.
	m := do(t, "GET", mainURL+"/metrics", "")
	if !bytes.Contains(m.body, []byte(`ebb_http_requests_total{code="201",route="PUT /v1/list-features/{entity_type}/{feature}/{version}"} 40`)) {
		t.Errorf("the hot listener's writes are not counted:\n%s", m.body)
	}
}

// rawStatus sends raw on a connection of its own to the server at url and
// returns the status code of the answer.
func rawStatus(t *testing.T, url, raw string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if f := strings.Fields(line); err != nil || len(f) < 2 {
		t.Fatalf("%q: answered %q, %v", raw, line, err)
	}
	return strings.Fields(line)[1]
}

// TestHotShutdownCancelsWork: a request on the hot listener whose client
// stays (or whose body keeps the listener from watching for a hang-up)
// runs until its handler returns; at shutdown, once the drain time is
// over, its context is cancelled, so abandoned work cannot hold the
// process.
func TestHotShutdownCancelsWork(t *testing.T) {
	entered := make(chan struct{})
	cancelled := make(chan error, 1)
	feature := func(s *server.Server) {
		s.Route("GET /v1/wait", server.AdminResource, func(_ http.ResponseWriter, r *http.Request) error {
			close(entered)
			<-r.Context().Done()
			cancelled <- r.Context().Err()
			return r.Context().Err()
		})
	}
	const drain = 300 * time.Millisecond
	l := serveBoth(t, drain, feature)
	client := &http.Client{Timeout: 10 * time.Second}
	answered := make(chan error, 1)
	go func() {
		resp, err := client.Get(l.srv.HotURL() + "/v1/wait")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	<-entered
	start := time.Now()
	l.cancel()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v", err)
		}
		if took := time.Since(start); took < drain {
			t.Errorf("cancelled after %v, before the drain time %v was over", took, drain)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hot listener's request was not cancelled 10 s into a shutdown")
	}
	select {
	case err := <-l.served:
		l.served <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe still running 10 s into a shutdown")
	}
	<-answered
}

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	return serveBothWith(t, drain, server.Options{Features: features})
}

// serveBothWith is serveBoth with opts, its DB, registry and hot address
// filled in.
func serveBothWith(t *testing.T, drain time.Duration, opts server.Options) *listening {
	t.Helper()
	db, err := ebb.Open(t.Context(), ebb.Options{Dir: filepath.Join(t.TempDir(), "data"), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	opts.DB, opts.Registerer, opts.HotAddr = db, prometheus.NewRegistry(), "127.0.0.1:0"
	srv, _ := newServer(t, opts)
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

	// Requests http.Client does not send, written raw: the same answers
	// on both listeners, and every refusal in the API's JSON error shape.
	for _, raw := range rawRequests {
		m, h := rawAnswers(t, mainURL, raw), rawAnswers(t, hotURL, raw)
		if m.String() != h.String() {
			t.Errorf("%.200q:\nmain %s\nhot  %s", raw, m, h)
		}
		for name, a := range map[string]rawAnswer{"main": m, "hot": h} {
			for _, r := range a.responses {
				var b struct {
					Error struct{ Code, Message string } `json:"error"`
				}
				if err := json.Unmarshal(r.body, &b); r.status >= 400 && (err != nil || b.Error.Code == "" || b.Error.Message == "" || r.header.Get("Content-Type") != "application/json") {
					t.Errorf("%.200q: %s answered %d %s %q, not an API error", raw, name, r.status, r.header.Get("Content-Type"), r.body)
				}
			}
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

// rawRequests are requests, some malformed, that http.Client does not
// send: each listener must answer them as net/http does.
var rawRequests = []string{
	"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /healthz HTTP/1.0\r\n\r\n", // answered as HTTP/1.0
	"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /readyz HTTP/1.0\r\n\r\n",
	"GET /v1/%zz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /healthz?x=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
	"BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	// Headers ending in a bare LF: alone, then followed by a second
	// request, at once or a moment later.
	"GET /healthz HTTP/1.1\r\nHost: x\nX-A: y\n\n",
	"GET /healthz HTTP/1.1\r\nHost: x\nX-A: y\n\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: x\nX-A: y\n\n" + rawPause + "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /healthz HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n",
	"GET /healthz HTTP/0.9\r\nHost: x\r\n\r\n",
	"GET /healthz HTTP/1.10\r\nHost: x\r\n\r\n",
	"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
	"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}",
	"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n{}",
	"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;a=b\r\n{}\r\n0\r\nX-T: 1\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: x\r\nFoo Bar: x\r\n\r\n", // header name with a space
	"GET /healthz HTTP/1.1\r\nHost: x\r\nX : x\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: \r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", // empty Host
	"GET /healthz HTTP/1.1\r\n\r\n",                                                  // no Host
	"GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: x y\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n",
	"GET /healthz HTTP/1.0\r\nExpect: foo\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
	"CONNECT x:80 HTTP/1.1\r\nHost: x:80\r\n\r\n",
	"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: "+strings.Repeat("a", 1000)+"\r\n", 70) + "\r\n", // 431
}

// rawPause in a raw request splits it into writes 200 ms apart.
const rawPause = "<pause>"

// rawAnswer is what a listener answered on one connection: its
// responses, and whether it then closed the connection.
type rawAnswer struct {
	responses []rawResponse
	closed    bool
}

type rawResponse struct {
	proto string
	response
}

func (a rawAnswer) String() string {
	var b strings.Builder
	for _, r := range a.responses {
		fmt.Fprintf(&b, "[%s %d %s %s] ", r.proto, r.status, r.header.Get("Content-Type"), bytes.TrimSpace(r.body))
	}
	if len(a.responses) == 0 {
		b.WriteString("no answer; ")
	}
	fmt.Fprintf(&b, "closed: %v", a.closed)
	return b.String()
}

// rawAnswers sends raw on a connection of its own to the server at url
// and reads the answers until the server closes the connection or sends
// nothing more for 300 ms.
func rawAnswers(t *testing.T, url, raw string) rawAnswer {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, part := range strings.Split(raw, rawPause) {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		if _, err := io.WriteString(conn, part); err != nil {
			t.Fatal(err)
		}
	}
	var a rawAnswer
	br := bufio.NewReader(conn)
	for wait := 5 * time.Second; ; wait = 300 * time.Millisecond {
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			a.closed = !(errors.As(err, &ne) && ne.Timeout())
			return a // with no response at all when none came in 5 s
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%.200q: %s answered what is not an HTTP response: %v", raw, url, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%.200q: %s: %v", raw, url, err)
		}
		a.responses = append(a.responses, rawResponse{resp.Proto, response{resp.StatusCode, resp.Header, body}})
		if resp.Close {
			// Said so; net/http may linger before it closes.
			a.closed = true
			return a
		}
	}
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

// TestTokenCheckedBeforeBody: with an auth file, a request whose body
// arrives slowly, or not at all, and whose token is missing or unknown is
// answered 401 as soon as its headers are in, on both listeners, and its
// connection closed; it holds nothing until the read timeout.
func TestTokenCheckedBeforeBody(t *testing.T) {
	l := serveBothWith(t, time.Second, server.Options{Auth: loadAuth(t, authYAML)})
	for _, c := range []struct{ name, head string }{
		{"over 1 MiB, no token", "POST /v1/indexes/events/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{\"events\":["},
		{"small, unknown token", "POST /v1/indexes/events/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 100\r\n\r\n{"},
		{"chunked, no token", "PUT /v1/tables/t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"},
		{"no body sent, no token", "POST /v1/indexes/events/events HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n"},
	} {
		for _, u := range []string{l.main, l.srv.HotURL()} {
			conn, err := net.Dial("tcp", strings.TrimPrefix(u, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(conn, c.head); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = conn.SetReadDeadline(start.Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Errorf("%s on %s: no answer after %v: %v", c.name, u, time.Since(start).Round(time.Millisecond), err)
				conn.Close()
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := response{resp.StatusCode, resp.Header, body}
			if r.status != 401 || r.errorCode(t) != server.CodeUnauthenticated {
				t.Errorf("%s on %s: %d %s", c.name, u, r.status, body)
			}
			// The body was never read: the connection closes (a read
			// that ends at the deadline means it stayed open).
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			var ne net.Error
			if _, err := conn.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("%s on %s: the connection stayed open after the 401 (%v)", c.name, u, err)
			}
			conn.Close()
		}
	}
	// A valid token still gets its body read, on the hot listener too.
	for i, u := range []string{l.main, l.srv.HotURL()} {
		r := call(t, "PUT", fmt.Sprintf("%s/v1/list-features/user/f%d/_", u, i), "all-token", strings.NewReader(`{"ttl":"720h"}`))
		if r.status != 201 {
			t.Errorf("%s: authorized write: %d %s", u, r.status, r.body)
		}
	}
}

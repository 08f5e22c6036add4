package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/server"
)

// EnvChromium names the Chromium binary the browser tests drive.
// scripts/with-chromium.sh (part of `make test`) installs Debian's chromium
// package when it is missing and sets it.
const EnvChromium = "EBB_CHROMIUM"

// chromium returns the browser to drive. Without EnvChromium a plain `go
// test` skips the browser tests, as it does the remote backends; when every
// backend is selected (testselect.Env=all, as `make test` sets it) the test
// fails rather than skips, so that a run which did not cover the page
// cannot pass for one that did.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv(EnvChromium)
	if path == "" && !testselect.Everything(t) {
		t.Skipf("%s is not set: the browser tests run under `make test`, or through scripts/with-chromium.sh go test ./server/ui/", EnvChromium)
	}
	if path == "" {
		t.Fatalf("%s is not set: run the browser tests with `make test`, or through "+
			"scripts/with-chromium.sh go test ./server/ui/ (it installs Debian's chromium package when missing), "+
			"or set %s to a Chromium binary", EnvChromium, EnvChromium)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", EnvChromium, path, err)
	}
	return path
}

// browser is one headless Chromium tab for one test, closed when the test
// ends. It records the page's uncaught exceptions and console errors,
// which fail the test.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // where screenshots go

	mu       sync.Mutex
	problems []string
}

func newBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root inside its sandbox (containers,
		// CI); the page under test is our own.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc() // waits for the browser to exit
	})
	b := &browser{t: t, ctx: ctx, dir: t.TempDir()}
	// The window of a headless browser has a minimum width; the viewport
	// is what the page sees.
	defer b.do("set the viewport", chromedp.EmulateViewport(int64(width), int64(height)))
	if err := chromedp.Listen(ctx, func(ev any) {
		var problem string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problem = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				problem += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				problem = "console.error: " + strings.Join(parts, " ")
			}
		}
		if problem != "" {
			b.mu.Lock()
			b.problems = append(b.problems, problem)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("the page reported %s", p)
		}
	})
	return b
}

// do runs actions, failing the test with what was being done.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fatal(what, err)
	}
}

func (b *browser) fatal(what string, err error) {
	b.t.Helper()
	// A screenshot of the moment helps more than the error alone.
	if shot, serr := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)); serr == nil {
		name := filepath.Join(b.dir, "failure.png")
		if os.WriteFile(name, shot, 0o644) == nil {
			b.t.Logf("screenshot of the failure: %s", name)
		}
		if *keepScreenshots != "" {
			_ = os.WriteFile(filepath.Join(*keepScreenshots, b.t.Name()+"-failure.png"), shot, 0o644)
		}
	}
	b.t.Fatalf("%s: %v", what, err)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fatal("evaluate "+expr, err)
	}
	return v
}

// waitFor polls a JavaScript expression until it is truthy.
// A poll begun while a navigation replaces the page's JavaScript context
// fails with "Cannot find context with specified id" (seen once right
// after a Navigate); it is begun again, in the new context, a few times.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	for attempt := 1; ; attempt++ {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
		if err == nil {
			return
		}
		if attempt < 4 && strings.Contains(err.Error(), "Cannot find context with specified id") {
			b.t.Logf("wait until %s: %v; polling again", what, err)
			continue
		}
		b.fatal("wait until "+what+" ("+expr+")", err)
	}
}

// screenshot saves the whole page under the test's temporary directory
// and returns the PNG.
func (b *browser) screenshot(name string) []byte {
	b.t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.fatal("screenshot "+name, err)
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
	if *keepScreenshots != "" {
		// Kept past the test, for a person to look at.
		kept := filepath.Join(*keepScreenshots, b.t.Name()+"-"+name+".png")
		if err := os.WriteFile(kept, shot, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	return shot
}

var keepScreenshots = flag.String("screenshots", "", "also write every screenshot into this existing directory")

// js quotes s as a JavaScript string literal.
func js(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// clock is a stopped clock the test moves by hand, so that the runway
// the page shows and the one the API answers are the same figure.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a real ebb server for one test: an ebb.DB on the embedded Pebble
// store in a temporary directory, on a stopped clock half way through an
// hour, served over HTTP on a loopback port.
type env struct {
	t     *testing.T
	url   string
	clock *clock
}

func newEnv(t *testing.T, auth *server.Auth) *env {
	t.Helper()
	c := &clock{now: time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)}
	reg := prometheus.NewRegistry()
	db, err := ebb.Open(context.Background(), ebb.Options{
		Dir: t.TempDir(), Now: c.Now, Registerer: reg,
		// The manager runs when the test says (apply), not on its own.
		ReconcileInterval: time.Hour,
		SweepInterval:     50 * time.Millisecond,
		CacheTTL:          100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	srv, err := server.New(server.Options{DB: db, Registerer: reg, Gatherer: reg, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &env{t: t, url: ts.URL, clock: c}
}

// call sends a request to the API and decodes a JSON answer into out
// (when not nil), failing the test unless the status is want.
func (e *env) call(method, path, token string, body any, want int, out any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// index is the part of GET /v1/indexes/{name} the tests compare.
type index struct {
	Shards []struct {
		Table, Start, End, State, Capacity string
	}
	Retention       string
	RunwayRemaining string `json:"runway_remaining"`
}

func (e *env) index(name, token string) index {
	e.t.Helper()
	var idx index
	e.call(http.MethodGet, "/v1/indexes/"+name, token, nil, http.StatusOK, &idx)
	return idx
}

// plan is the answer of a reconcile.
type plan struct {
	Actions []struct{ Op, Table string }
}

func (e *env) plan(name, token string) plan {
	e.t.Helper()
	var p plan
	e.call(http.MethodPost, "/v1/indexes/"+name+"/reconcile?dry_run=true", token, nil, http.StatusOK, &p)
	return p
}

// seed creates what the dashboard shows: the index "events" of hourly
// shards kept 3 h, with events; the list feature user/stories with a
// list of two items; the shared table "orders" with two items, one of
// them living 90 s.
func (e *env) seed(token string) {
	e.t.Helper()
	now := e.clock.Now()
	e.call(http.MethodPut, "/v1/indexes/events", token, map[string]any{
		"table_bucket": "1h", "partition_bucket": "10m", "retention": "3h", "runway": 2,
	}, http.StatusCreated, nil)
	e.call(http.MethodPost, "/v1/indexes/events/events", token, map[string]any{"events": []map[string]any{
		{"index_id": "acc_1", "event_id": "e1", "timestamp": now.Add(-90 * time.Minute), "payload": "aGk="},
		{"index_id": "acc_1", "event_id": "e2", "timestamp": now, "payload": "aGk="},
	}}, http.StatusOK, nil)
	e.call(http.MethodPut, "/v1/list-features/user/stories/_", token, map[string]any{"ttl": "720h"}, http.StatusCreated, nil)
	e.call(http.MethodPost, "/v1/lists/user/stories/_/user-42/items", token, map[string]any{"items": []map[string]any{
		{"value": "c3RvcnktMQ==", "timestamp": now.Add(-time.Minute)},
		{"value": "c3RvcnktMg==", "timestamp": now},
	}}, http.StatusOK, nil)
	e.call(http.MethodPut, "/v1/tables/orders", token, map[string]any{"default_ttl": "0s"}, http.StatusCreated, nil)
	e.call(http.MethodPut, "/v1/tables/orders/items/o-1", token, map[string]any{
		"timestamp": now, "attributes": map[string]any{"total": 42},
	}, http.StatusOK, nil)
	e.call(http.MethodPut, "/v1/tables/orders/items/o-2", token, map[string]any{
		"timestamp": now, "attributes": map[string]any{"total": 7}, "ttl": "90s",
	}, http.StatusOK, nil)
}

// shardStates are the shards the page draws for an index: table -> the
// state it labels, and whether it marks the shard holding now.
func shardStates(b *browser, name string) map[string]string {
	b.t.Helper()
	return eval[map[string]string](b, fmt.Sprintf(`Object.fromEntries([...document.querySelectorAll('[data-index=%s] li.shard')]
		.map((li) => [li.dataset.table, li.dataset.state + (li.dataset.hot === 'true' ? '+now' : '') + ' | ' + li.querySelector('.state').textContent]))`, js(name)))
}

// wantStates derives from the API's answer the state each shard must be
// labelled with: future shards were created ahead, a past shard whose end
// plus the retention is not after now has expired and awaits its drop,
// and every other shard is live.
func wantStates(idx index, now time.Time) map[string]string {
	retention, err := time.ParseDuration(idx.Retention)
	if err != nil {
		panic(err)
	}
	out := map[string]string{}
	for _, sh := range idx.Shards {
		end, err := time.Parse(time.RFC3339, sh.End)
		if err != nil {
			panic(err)
		}
		switch {
		case sh.State == "future":
			out[sh.Table] = "created-ahead | created ahead"
		case sh.State == "hot":
			out[sh.Table] = "live+now | live · now"
		case !end.Add(retention).After(now):
			out[sh.Table] = "expired-awaiting-drop | expired · awaiting drop"
		default:
			out[sh.Table] = "live | live"
		}
	}
	return out
}

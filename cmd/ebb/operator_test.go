package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestOperatorAgainstServe walks the operator's points against a real
// `ebb serve` process, from outside: the API over HTTP and the CLI as a
// user runs it.
func TestOperatorAgainstServe(t *testing.T) {
	p := startServe(t, "--data", t.TempDir(), "--addr", "127.0.0.1:0")
	cli := func(args ...string) (int, string, string) { return ebbRun(p.url, args...) }
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := cli(args...)
		if code != 0 {
			t.Fatalf("ebb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// An index whose runway cannot outlast a failover is refused, with
	// the runway it needs.
	if code, body := call("PUT", "/v1/indexes/tiny", `{"table_bucket":"10s","partition_bucket":"1s","retention":"20s","runway":2}`); code != 400 || !strings.Contains(body, "raise runway to at least") {
		t.Fatalf("a runway shorter than a failover: %d %s", code, body)
	}
	ok("index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "10m", "--retention", "3h", "--runway", "2")

	// A bare reconcile plans; applying takes dry_run=false.
	if code, body := call("POST", "/v1/indexes/ev/reconcile", ""); code != 200 || !strings.Contains(body, `"applied":false`) {
		t.Fatalf("bare reconcile: %d %s", code, body)
	}
	if code, _, _ := cli("index", "plan", "ev", "--detailed-exitcode"); code != 0 {
		t.Fatalf("plan of a fresh index: exit %d, want 0", code)
	}

	// Changing an index: a table bucket that does not divide the old one
	// is named; another one is a layout change the plan and apply show,
	// and changing back before it took effect cancels it; a shorter
	// retention is held until an apply.
	if code, body := call("PUT", "/v1/indexes/ev", `{"table_bucket":"90m","partition_bucket":"10m","retention":"3h"}`); code != 400 || !strings.Contains(body, `table_bucket 1h cannot become 1h30m`) {
		t.Fatalf("a table bucket not dividing the old one: %d %s", code, body)
	}
	if out := ok("index", "update", "ev", "--table-bucket", "2h", "--partition-bucket", "30m"); !strings.Contains(out, "table bucket 2h, partition bucket 30m") {
		t.Fatalf("update of the buckets: %q", out)
	}
	for _, verb := range []string{"plan", "apply"} {
		if out := ok("index", verb, "ev"); !strings.Contains(out, "> layout") || !strings.Contains(out, "layout change: table_bucket 1h -> 2h, partition_bucket 10m -> 30m from ") {
			t.Fatalf("%s after a layout change: %q", verb, out)
		}
	}
	if out := ok("index", "show", "ev"); !strings.Contains(out, "layouts:          from 1970-01-01T00:00:00Z: table bucket 1h, partition bucket 10m") {
		t.Fatalf("show after a layout change: %q", out)
	}
	if out := ok("index", "update", "ev", "--table-bucket", "1h", "--partition-bucket", "10m"); strings.Contains(out, "layout") {
		t.Fatalf("update back: %q", out)
	}
	if out := ok("index", "update", "ev", "--retention", "2h"); !strings.Contains(out, "retention 2h (3h kept until") {
		t.Fatalf("update: %q", out)
	}
	if code, out, _ := cli("index", "plan", "ev", "--detailed-exitcode"); code != 2 || !strings.Contains(out, "to drop") {
		t.Fatalf("plan after a shorter retention: exit %d, %q", code, out)
	}
	ok("index", "apply", "ev", "--yes")
	if out := ok("index", "show", "ev"); strings.Contains(out, "held retention") || !strings.Contains(out, "ROWS") {
		t.Fatalf("show after apply: %q", out)
	}

	// Errors in the API's words; durations as written; no escaped "<".
	now := time.Now().UTC()
	code, body := call("POST", "/v1/indexes/ev/events", fmt.Sprintf(`{"events":[{"index_id":"a","event_id":"e","timestamp":%q}]}`, now.Add(-5*time.Hour).Format(time.RFC3339)))
	if code != 422 || !strings.Contains(body, "retention 2h <= now") || strings.Contains(body, "timeseries:") {
		t.Fatalf("an expired event: %d %s", code, body)
	}
	if code, body := call("GET", "/v1/indexes/nope", ""); code != 404 || !strings.Contains(body, `"message":"index \"nope\" not found"`) {
		t.Fatalf("a missing index: %d %s", code, body)
	}
	if code, _, errOut := cli("index", "lst"); code != 1 || !strings.Contains(errOut, `did you mean "list"`) {
		t.Fatalf("a mistyped subcommand: exit %d, %q", code, errOut)
	}

	// Discoverability and paging.
	ok("lists", "create-feature", "user", "seen", "_", "--ttl", "720h")
	if out := ok("lists", "features"); !strings.Contains(out, "user         seen     _") {
		t.Fatalf("lists features: %q", out)
	}
	var items []string
	for i := range 25 {
		items = append(items, fmt.Sprint("s", i))
	}
	ok(append([]string{"lists", "add", "user", "seen", "_", "u1"}, items...)...)
	// One header row, then every item across the pages of ten.
	if out := ok("lists", "get", "user", "seen", "_", "u1", "--limit", "10", "--all"); strings.Count(out, "\n") != 26 || !strings.HasPrefix(out, "TIMESTAMP") {
		t.Fatalf("lists get --all: %d lines, want a header and 25 items:\n%s", strings.Count(out, "\n"), out)
	}

	// Every DELETE of something already gone answers alike.
	for _, path := range []string{"/v1/indexes/gone", "/v1/list-features/user/gone/_", "/v1/tables/gone", "/v1/tables/ev_t/items/gone"} {
		if path == "/v1/tables/ev_t/items/gone" {
			call("PUT", "/v1/tables/ev_t", `{}`)
		}
		if code, body := call("DELETE", path, ""); code != 204 {
			t.Errorf("DELETE %s: %d %s, want 204", path, code, body)
		}
	}

	// Deleting an index asks first; scripts pass --yes.
	if code, _, errOut := cli("index", "delete", "ev"); code != 1 || !strings.Contains(errOut, "pass --yes") {
		t.Fatalf("delete without --yes: exit %d, %q", code, errOut)
	}
	ok("index", "delete", "ev", "--yes")
}

package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/server"
)

// listsAPIServer serves the lists API over a Pebble store.
func listsAPIServer(t *testing.T) string {
	t.Helper()
	st := testbackend.Pebble(t, nil)
	svc, err := lists.New(context.Background(), st, lists.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Features: []server.Feature{server.Lists(svc)}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// ebbRun runs the CLI against url and returns its exit code and output.
func ebbRun(url string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"--server", url}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestListsCommands(t *testing.T) {
	url := listsAPIServer(t)
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := ebbRun(url, args...)
		if code != 0 {
			t.Fatalf("ebb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		code, _, errOut := ebbRun(url, args...)
		if code == 0 || !strings.Contains(errOut, want) {
			t.Fatalf("ebb %s: exit %d, stderr %q; want a failure saying %q", strings.Join(args, " "), code, errOut, want)
		}
	}
	// Names with '/', '#' and '|' travel escaped.
	list := []string{"user/kind", "stories#1", "_", "id|42"}
	ok("lists", "create-feature", list[0], list[1], "", "--ttl", "720h")
	// Another --ttl changes the existing version's TTL in place.
	if out := ok("lists", "create-feature", list[0], list[1], "_", "--ttl", "1h"); !strings.Contains(out, "ttl 1h,") {
		t.Fatalf("create-feature with another --ttl: %q", out)
	}
	if out := ok("lists", "features", list[0]); !strings.Contains(out, "user/kind    stories#1  _        1h") {
		t.Fatalf("lists features after the TTL change: %q", out)
	}
	ok("lists", "create-feature", list[0], list[1], "_", "--ttl", "720h")
	if out := ok("lists", "features", list[0]); !strings.Contains(out, "ENTITY_TYPE") || !strings.Contains(out, "user/kind    stories#1  _        720h") {
		t.Fatalf("lists features: %q", out)
	}
	// --expiry changes the mode of the existing version online.
	if out := ok("lists", "create-feature", list[0], list[1], "_", "--ttl", "720h", "--expiry", "drop"); !strings.Contains(out, "expiry drop") {
		t.Fatalf("create-feature --expiry drop: %q", out)
	}
	if out := ok("lists", "features", list[0]); !strings.Contains(out, "EXPIRY") || !strings.Contains(out, "drop") {
		t.Fatalf("lists features after the change: %q", out)
	}
	fails("expiry", "lists", "create-feature", list[0], list[1], "_", "--ttl", "720h", "--expiry", "later")
	if out := ok("lists", "features", "nobody", "--output", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("lists features of an entity type without any: %q", out)
	}

	now := time.Now().UTC()
	ts := now.Add(-time.Minute).Format(time.RFC3339)
	if out := ok(append([]string{"lists", "add"}, append(list, "--timestamp", ts, "story-1", "story-2")...)...); out != "written 2, skipped (expired) 0\n" {
		t.Fatalf("add printed %q", out)
	}
	newer := now.Format(time.RFC3339)
	ok(append([]string{"lists", "add"}, append(list, "--timestamp", newer, "--base64", "AAE=")...)...)
	ok(append([]string{"lists", "add"}, append(list, "--timestamp", "2000-01-01T00:00:00Z", "ancient")...)...)

	// A table under a header row, its times of one width.
	newerCol := now.Truncate(time.Second).Format("2006-01-02T15:04:05.000Z")
	out := ok(append([]string{"lists", "get"}, list...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || strings.Fields(lines[0])[0] != "TIMESTAMP" || strings.Fields(lines[0])[1] != "VALUE" ||
		lines[1] != newerCol+"  "+`"\x00\x01"` || !strings.HasSuffix(lines[2], "  story-2") && !strings.HasSuffix(lines[2], "  story-1") {
		t.Fatalf("get printed %q", out)
	}
	if out := ok(append([]string{"lists", "get", "--limit", "1", "--base64"}, list...)...); out != "TIMESTAMP                 VALUE\n"+newerCol+"  AAE=\n" {
		t.Fatalf("get --limit 1 --base64 printed %q", out)
	}
	if out := ok(append([]string{"lists", "get", "--min-timestamp", newer, "--json"}, list...)...); !strings.Contains(out, `"value": "AAE="`) || strings.Contains(out, "c3Rvcnk") {
		t.Fatalf("get --min-timestamp --json printed %q", out)
	}
	if all := ok(append([]string{"lists", "get", "--limit", "1", "--all"}, list...)...); all != out {
		t.Fatalf("get --limit 1 --all printed %q, want what one page of all printed, %q", all, out)
	}
	code, _, errOut := ebbRun(url, append([]string{"lists", "get", "--limit", "2"}, list...)...)
	if code != 0 || !strings.Contains(errOut, "more items may follow: --page-token ") {
		t.Fatalf("a full page: exit %d, stderr %q", code, errOut)
	}

	fails("--value VALUE", append([]string{"lists", "rm"}, list...)...)
	ok(append([]string{"lists", "rm", "--value", "story-1"}, list...)...)
	if out := ok(append([]string{"lists", "get"}, list...)...); strings.Contains(out, "story-1") || !strings.Contains(out, "story-2") {
		t.Fatalf("after rm --value: %q", out)
	}
	ok(append([]string{"lists", "rm", "--all", "--yes"}, list...)...)
	if out := ok(append([]string{"lists", "get"}, list...)...); out != "" {
		t.Fatalf("after rm --all: %q", out)
	}

	if out := ok("lists", "show-feature", list[0], list[1], "_"); !strings.Contains(out, "ttl 720h") {
		t.Fatalf("show-feature: %q", out)
	}
	ok("lists", "delete-feature", list[0], list[1], "_", "--yes")
	fails("not_found", append([]string{"lists", "get"}, list...)...)
	fails("not_found", "lists", "show-feature", list[0], list[1], "_")
	fails("--ttl is required", "lists", "create-feature", "a", "b", "_")
}

// TestListsCapCountAndWholeFeature: --max-items, what an add trimmed, a
// list's count, and delete-feature --all-versions.
func TestListsCapCountAndWholeFeature(t *testing.T) {
	url := listsAPIServer(t)
	list := []string{"user", "seen", "_", "u-1"}
	if out := ok(t, url, "lists", "create-feature", "user", "seen", "_", "--ttl", "720h", "--max-items", "2"); !strings.Contains(out, "max items 2") {
		t.Fatalf("create-feature --max-items: %q", out)
	}
	// Without --max-items the cap stays.
	if out := ok(t, url, "lists", "show-feature", "user", "seen", "_"); !strings.Contains(out, "max items 2") {
		t.Fatalf("show-feature: %q", out)
	}
	if out := ok(t, url, "lists", "features", "user"); !strings.Contains(out, "MAX_ITEMS") || !strings.Contains(out, "sweep   2") {
		t.Fatalf("features: %q", out)
	}
	fails(t, url, "max_items", "lists", "create-feature", "user", "seen", "_", "--ttl", "720h", "--max-items", "-1")
	ts := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	if out := ok(t, url, append([]string{"lists", "add"}, append(list, "--timestamp", ts, "a", "b", "c")...)...); out != "written 3, skipped (expired) 0, trimmed (max items) 1\n" {
		t.Fatalf("add beyond the cap printed %q", out)
	}
	if out := ok(t, url, append([]string{"lists", "count"}, list...)...); out != "2\n" {
		t.Fatalf("count printed %q", out)
	}
	if out := ok(t, url, append([]string{"lists", "count", "-o", "json"}, list...)...); strings.Join(strings.Fields(out), "") != `{"count":2}` {
		t.Fatalf("count -o json printed %q", out)
	}
	fails(t, url, "not_found", "lists", "count", "user", "nope", "_", "u-1")

	ok(t, url, "lists", "create-feature", "user", "seen", "v2", "--ttl", "1h")
	fails(t, url, "--all-versions", "lists", "delete-feature", "user", "seen")
	fails(t, url, "--all-versions", "lists", "delete-feature", "user", "seen", "_", "--all-versions")
	if out := ok(t, url, "lists", "delete-feature", "user", "seen", "--all-versions", "--yes"); !strings.Contains(out, "deleted every version") {
		t.Fatalf("delete-feature --all-versions printed %q", out)
	}
	fails(t, url, "not_found", "lists", "show-feature", "user", "seen", "_")
	fails(t, url, "not_found", "lists", "show-feature", "user", "seen", "v2")
	// Again: nothing is left, which is no error.
	ok(t, url, "lists", "delete-feature", "user", "seen", "--all-versions", "--yes")
	if out := ok(t, url, "lists", "delete-feature", "user", "seen", "--all-versions"); !strings.Contains(out, "nothing to delete") {
		t.Fatalf("delete-feature --all-versions of nothing printed %q", out)
	}
}

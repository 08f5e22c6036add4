package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// indexAPIServer serves the index API over a Pebble store.
func indexAPIServer(t *testing.T) (string, store.Store) {
	t.Helper()
	st := testbackend.Pebble(t, nil)
	svc, err := timeseries.New(t.Context(), st, timeseries.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Features: []server.Feature{server.Indexes(svc)}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, st
}

func indexCLI(url string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"--server", url}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestIndexCommands(t *testing.T) {
	url, st := indexAPIServer(t)
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := indexCLI(url, args...)
		if code != 0 {
			t.Fatalf("ebb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	if out := ok("index", "create", "events", "--table-bucket", "1h", "--partition-bucket", "10m", "--retention", "3h", "--runway", "1"); !strings.Contains(out, "index events created: 5 shards") {
		t.Errorf("create: %q", out)
	}
	if out := ok("index", "list"); !strings.Contains(out, "events  1h") || !strings.Contains(out, "RUNWAY_REMAINING") {
		t.Errorf("list: %q", out)
	}
	out := ok("index", "show", "events")
	if !strings.Contains(out, "retention:        3h") || strings.Count(out, "events_") != 5 || !strings.Contains(out, " hot ") {
		t.Errorf("show: %q", out)
	}
	if out := ok("index", "plan", "events"); !strings.Contains(out, "No changes") {
		t.Errorf("plan of a fresh index: %q", out)
	}

	// Lose a shard and leave a stray table: plan shows the create and the
	// stray, apply does it.
	var show struct{ Shards []struct{ Table string } }
	if err := json.Unmarshal([]byte(ok("index", "show", "events", "--json")), &show); err != nil {
		t.Fatal(err)
	}
	lost := show.Shards[len(show.Shards)-1].Table
	if err := st.DropTable(t.Context(), lost); err != nil {
		t.Fatal(err)
	}
	out = ok("index", "plan", "events")
	if !strings.Contains(out, "Plan for index events: 1 to create") || !strings.Contains(out, "+ create        "+lost+"  (runway: starts in 1 bucket)") {
		t.Errorf("plan: %q", out)
	}
	var plan struct {
		Actions []struct{ Op, Table string }
		Applied bool
	}
	if err := json.Unmarshal([]byte(ok("index", "plan", "events", "--json")), &plan); err != nil || len(plan.Actions) != 1 || plan.Applied {
		t.Fatalf("plan --json: %+v %v", plan, err)
	}
	if code, _, _ := indexCLI(url, "index", "plan", "events", "--detailed-exitcode"); code != 2 {
		t.Errorf("plan --detailed-exitcode with a change pending: exit %d, want 2", code)
	}
	if out := ok("index", "apply", "events"); !strings.Contains(out, "Applied to index events: 1 created, 0 dropped") {
		t.Errorf("apply: %q", out)
	}
	if out := ok("index", "plan", "events", "--detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Errorf("plan after apply: %q", out)
	}

	for _, args := range [][]string{
		{"index", "create", "Bad", "--table-bucket", "1h", "--partition-bucket", "10m", "--retention", "3h"},
		{"index", "create", "x", "--table-bucket", "7d", "--partition-bucket", "10m", "--retention", "3h"},
		{"index", "show", "nope"},
		{"index", "plan"},
	} {
		if code, _, errOut := indexCLI(url, args...); code == 0 || errOut == "" {
			t.Errorf("ebb %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
	}
	// Deleting asks first; without a terminal it takes --yes.
	if code, _, errOut := indexCLI(url, "index", "delete", "events"); code != 1 || !strings.Contains(errOut, "pass --yes") {
		t.Errorf("delete without a terminal or --yes: exit %d, %q", code, errOut)
	}
	atTerminal(t, "no\n")
	if code, _, errOut := indexCLI(url, "index", "delete", "events"); code != 1 || !strings.Contains(errOut, "Delete index events and drop its 5 shard(s)") || !strings.Contains(errOut, "not confirmed") {
		t.Errorf("delete answered no: exit %d, %q", code, errOut)
	}
	atTerminal(t, "yes\n")
	if out := ok("index", "delete", "events"); !strings.Contains(out, "deleted") {
		t.Errorf("delete: %q", out)
	}
	if code, _, errOut := indexCLI(url, "index", "show", "events"); code == 0 || !strings.Contains(errOut, "not_found") {
		t.Errorf("show after delete: %d %q", code, errOut)
	}
}

func TestIndexEvents(t *testing.T) {
	url := fullServer(t, false)
	ok(t, url, "index", "create", "events", "--table-bucket", "1h", "--partition-bucket", "10m", "--retention", "3h")

	// One event from flags, then a file in each of the forms write takes.
	now := time.Now().UTC().Truncate(time.Millisecond)
	if out := ok(t, url, "index", "write", "events", "--index-id", "acc/1", "--event-id", "flag", "--timestamp=-30m", "--payload", "hello"); out != "written 1 event(s) to events\n" {
		t.Fatalf("write from flags: %q", out)
	}
	dir := t.TempDir()
	ts := func(ago time.Duration) string { return now.Add(-ago).Format(time.RFC3339Nano) }
	files := map[string]string{
		"body.json":   `{"events": [{"index_id": "acc/1", "event_id": "b1", "timestamp": "` + ts(20*time.Minute) + `", "payload": "AAE="}]}`,
		"array.json":  `[{"index_id": "acc/1", "event_id": "a1", "timestamp": "` + ts(10*time.Minute) + `"}]`,
		"lines.jsonl": `{"index_id": "acc/1", "event_id": "l1", "timestamp": "` + ts(5*time.Minute) + `", "payload": "bGluZQ=="}` + "\n" + `{"index_id": "acc/1", "event_id": "l2", "timestamp": "` + ts(time.Minute) + `"}` + "\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := ok(t, url, "index", "write", "events", "--file", path); !strings.HasPrefix(out, "written ") {
			t.Fatalf("write %s: %q", name, out)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"index_id": "acc/1", "event_id": "x", "timestamp": "`+ts(10*time.Hour)+`"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, url, "(expired, HTTP 422)", "index", "write", "events", "--file", bad)
	fails(t, url, "say what to write", "index", "write", "events")
	fails(t, url, "unknown field", "index", "write", "events", "--file", writeTemp(t, `[{"index":"x"}]`))

	// An event's own TTL, from a flag or a file.
	ok(t, url, "index", "write", "events", "--index-id", "acc/2", "--event-id", "t1", "--ttl", "1h")
	ok(t, url, "index", "write", "events", "--file", writeTemp(t, `{"index_id": "acc/2", "event_id": "t2", "timestamp": "`+ts(time.Minute)+`", "ttl": "30m"}`))
	fails(t, url, "ttl 0s must be positive", "index", "write", "events", "--file", writeTemp(t, `[{"index_id": "acc/2", "event_id": "t3", "timestamp": "`+ts(time.Minute)+`", "ttl": "0s"}]`))
	fails(t, url, "shorter than the index's retention", "index", "write", "events", "--index-id", "acc/2", "--event-id", "t4", "--ttl", "3h")
	if out := ok(t, url, "index", "query", "events", "--index-id", "acc/2"); !strings.Contains(out, "t1") || !strings.Contains(out, "t2") || strings.Contains(out, "t4") {
		t.Fatalf("events with a ttl: %q", out)
	}

	// Query: a page and the next page's token, everything, JSON.
	code, out, errOut := cli("--server", url, "index", "query", "events", "--index-id", "acc/1", "--limit", "2")
	if code != 0 || !strings.Contains(out, "TIMESTAMP") || !strings.Contains(out, "flag  ") || !strings.Contains(out, "hello") || !strings.Contains(out, `"\x00\x01"`) || !strings.Contains(errOut, "--page-token ") {
		t.Fatalf("query: %d %q %q", code, out, errOut)
	}
	token := strings.Fields(errOut)[5]
	if out := ok(t, url, "index", "query", "events", "--index-id", "acc/1", "--limit", "2", "--page-token", token); !strings.Contains(out, "a1") || !strings.Contains(out, "l1        line") {
		t.Fatalf("next page: %q", out)
	}
	var page struct {
		Events []struct {
			EventID string `json:"event_id"`
			Payload []byte `json:"payload"`
		} `json:"events"`
		NextPageToken *string `json:"next_page_token"`
	}
	if err := json.Unmarshal([]byte(ok(t, url, "index", "query", "events", "--index-id", "acc/1", "--all", "--limit", "2", "--order", "desc", "-o", "json")), &page); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range page.Events {
		ids = append(ids, e.EventID)
	}
	if strings.Join(ids, " ") != "l2 l1 a1 b1 flag" || string(page.Events[1].Payload) != "line" || page.NextPageToken != nil {
		t.Fatalf("query --all --order desc: %+v", page)
	}
	if out := ok(t, url, "index", "query", "events", "--index-id", "acc/1", "--from=-7m", "--to", "now", "--base64"); !strings.Contains(out, "l1") || !strings.Contains(out, "bGluZQ==") || strings.Contains(out, "a1") {
		t.Fatalf("query --from --to: %q", out)
	}
	fails(t, url, "--from \"yesterday\"", "index", "query", "events", "--index-id", "acc/1", "--from", "yesterday")
	fails(t, url, "--order \"up\"", "index", "query", "events", "--index-id", "acc/1", "--order", "up")
	fails(t, url, "required flag(s) \"index-id\"", "index", "query", "events")
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBenchCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "--events", "500", "--queries", "20", "--expire-rows", "300", "--dir", t.TempDir()}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"ingest", "500 events", "query", "expire: drop shard", "expire: row deletes", "expire: row deletes, 1000 per write", "faster than deleting", "Expiry by shard size"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("bench output lacks %q:\n%s", want, stdout.String())
		}
	}
	// Piped, progress is plain lines: no bar, no control characters.
	if !strings.Contains(stderr.String(), "bench: run 1/3: ingest: 500/500 (100%) in ") || !strings.Contains(stderr.String(), "bench: run 3/3: query: 10/20 (50%)\n") ||
		strings.ContainsAny(stderr.String(), "\r\x1b") {
		t.Errorf("progress on a non-terminal: %q", stderr.String())
	}
	stdout.Reset()
	if code := run(append(args[:len(args)-2], "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("bench --json: exit %d: %s", code, stderr.String())
	}
	var rep struct {
		Results []struct {
			Phase     string
			Ops       int
			PerSecond float64 `json:"per_second"`
		}
		Runs           int
		DropSpeedup    float64 `json:"drop_speedup"`
		DropSpeedupMin float64 `json:"drop_speedup_min"`
		DropSpeedupMax float64 `json:"drop_speedup_max"`
		Expiry         []struct {
			Rows          int
			DropSeconds   float64 `json:"drop_seconds"`
			DeleteSeconds float64 `json:"delete_seconds"`
			Before        int64   `json:"sst_bytes_before"`
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Results) != 5 || rep.Results[0].Ops != 500 || rep.Runs != 3 ||
		rep.DropSpeedup <= 0 || rep.DropSpeedupMin > rep.DropSpeedup || rep.DropSpeedup > rep.DropSpeedupMax ||
		len(rep.Expiry) != 1 || rep.Expiry[0].Rows != 300 || rep.Expiry[0].DropSeconds <= 0 || rep.Expiry[0].DeleteSeconds <= 0 || rep.Expiry[0].Before <= 0 {
		t.Fatalf("bench --json: %+v %v\n%s", rep, err, stdout.String())
	}
	if !strings.Contains(stdout.String(), `"min_per_second"`) {
		t.Fatalf("bench --json has no spread:\n%s", stdout.String())
	}
	// Expiry alone, at two sizes.
	stdout.Reset()
	if code := run([]string{"bench", "--expire-only", "--expire-rows", "200,400", "--runs", "1", "--dir", t.TempDir()}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench --expire-only: exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); strings.Contains(out, "ingest") || !strings.Contains(out, "expire 200 rows: drop shard") || !strings.Contains(out, "expire 400 rows: row deletes") {
		t.Errorf("bench --expire-only output:\n%s", out)
	}
	if code := run([]string{"bench", "--limit", "0"}, &stdout, &stderr); code == 0 {
		t.Error("bench --limit 0 accepted")
	}
}

// TestProgressTerminal checks the bar drawn on a terminal: redrawn in
// place, and cleared when the bench ends.
func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgressFor(&b, true)
	for i := range 10 {
		p.update("ingest", i+1, 10)
	}
	p.update("query", 1, 4)
	p.done()
	out := b.String()
	if !strings.Contains(out, "ingest") || !strings.Contains(out, "query") || !strings.Contains(out, "\r") || strings.Contains(out, "\n") {
		t.Fatalf("terminal progress: %q", out)
	}
	if !strings.HasSuffix(out, "\r") {
		t.Errorf("the bar is not cleared at the end: %q", out[max(0, len(out)-80):])
	}
}

// atTerminal makes the confirmations read answer as if typed at a
// terminal, until the test ends.
func atTerminal(t *testing.T, answer string) {
	t.Helper()
	in, isTerm := confirmInput, inputIsTerminal
	confirmInput, inputIsTerminal = strings.NewReader(answer), func() bool { return true }
	t.Cleanup(func() { confirmInput, inputIsTerminal = in, isTerm })
}

// TestIndexApplyConfirmsDrops: an apply that drops shards shows what each
// drop destroys and asks first; --yes applies at once. The API plans by
// default: applying takes dry_run=false.
func TestIndexApplyConfirmsDrops(t *testing.T) {
	clock := storetest.NewClock(storetest.Epoch)
	st := testbackend.Pebble(t, clock.Now)
	svc, err := timeseries.New(t.Context(), st, timeseries.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Features: []server.Feature{server.Indexes(svc)}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	url := ts.URL
	run := func(args ...string) (int, string, string) { return indexCLI(url, args...) }
	if code, _, errOut := run("index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "10m", "--retention", "2h", "--runway", "1"); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := run("index", "write", "ev", "--index-id", "a", "--event-id", "e1", "--timestamp", clock.Now().Add(-90*time.Minute).Format(time.RFC3339), "--payload", "x"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := run("index", "show", "ev")
	if code != 0 || !strings.Contains(out, "ROWS") || !regexp.MustCompile(`(?m)^ev_\d+ .* past +on_demand +1 +\d+(\.\d)? [KM]?i?B$`).MatchString(out) {
		t.Fatalf("show: exit %d, %q %q; want the shard with the event to show 1 row", code, out, errOut)
	}
	clock.Advance(3 * time.Hour)

	// POST .../reconcile without dry_run plans and changes nothing.
	resp, err := http.Post(url+"/v1/indexes/ev/reconcile", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Actions []struct {
			Op          string
			Rows, Bytes *int64
		}
		Applied bool
	}
	err = json.NewDecoder(resp.Body).Decode(&plan)
	resp.Body.Close()
	if err != nil || plan.Applied {
		t.Fatalf("reconcile without dry_run: applied=%v %v", plan.Applied, err)
	}
	var drops, rows int64
	for _, a := range plan.Actions {
		if a.Op == "drop" {
			drops++
			if a.Rows == nil || a.Bytes == nil {
				t.Fatalf("a drop without its rows and bytes: %+v", a)
			}
			rows += *a.Rows
		}
	}
	if drops == 0 || rows != 1 {
		t.Fatalf("plan: %d drops destroying %d rows, want some drops and the 1 event written", drops, rows)
	}

	code, out, errOut = run("index", "plan", "ev", "--detailed-exitcode")
	if code != 2 || !strings.Contains(out, "to drop (1 rows, ") || !strings.Contains(out, "destroys 1 rows") {
		t.Fatalf("plan: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := run("index", "apply", "ev"); code != 1 || !strings.Contains(errOut, "pass --yes") {
		t.Fatalf("apply with drops, no terminal: exit %d, %q", code, errOut)
	}
	atTerminal(t, "nope\n")
	if code, _, errOut := run("index", "apply", "ev"); code != 1 || !strings.Contains(errOut, "Apply this plan to index ev, dropping") || !strings.Contains(errOut, "not confirmed") {
		t.Fatalf("apply answered no: exit %d, %q", code, errOut)
	}
	if code, _, _ := run("index", "plan", "ev", "--detailed-exitcode"); code != 2 {
		t.Fatal("a refused apply changed something")
	}
	code, out, errOut = run("index", "apply", "ev", "--yes")
	if code != 0 || !strings.Contains(out, "Applied to index ev: ") || !strings.Contains(out, "dropped (1 rows, ") {
		t.Fatalf("apply --yes: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := run("index", "plan", "ev", "--detailed-exitcode"); code != 0 || !strings.Contains(out, "No changes") {
		t.Fatalf("plan after apply: exit %d, %q", code, out)
	}

	// A shorter retention is held until an apply makes its drops.
	code, out, errOut = run("index", "update", "ev", "--retention", "1h")
	if code != 0 || !strings.Contains(out, "retention 1h (2h kept until \"ebb index apply ev\")") {
		t.Fatalf("update: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := run("index", "show", "ev"); code != 0 || !strings.Contains(out, "held retention:   2h") {
		t.Fatalf("show: exit %d, %q", code, out)
	}
	if code, out, _ := run("index", "plan", "ev", "--detailed-exitcode"); code != 2 || !strings.Contains(out, "1 to drop") {
		t.Fatalf("plan after a shorter retention: exit %d, %q", code, out)
	}
	if code, _, errOut := run("index", "apply", "ev", "--yes"); code != 0 {
		t.Fatal(errOut)
	}
	if code, out, _ := run("index", "show", "ev"); code != 0 || strings.Contains(out, "held retention") || !strings.Contains(out, "retention:        1h") {
		t.Fatalf("show after apply: exit %d, %q", code, out)
	}
}

// TestCLIErrors: a mistyped subcommand fails and suggests the nearest;
// refusals from the server name flags, not the API's fields.
func TestCLIErrors(t *testing.T) {
	url, _ := indexAPIServer(t)
	for _, args := range [][]string{{"index", "lst"}, {"tables", "lsit"}, {"lists", "gt"}} {
		code, _, errOut := indexCLI(url, args...)
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("unknown command %q", args[1])) || !strings.Contains(errOut, "did you mean") {
			t.Errorf("ebb %s: exit %d, %q", strings.Join(args, " "), code, errOut)
		}
	}
	if code, out, _ := indexCLI(url, "index"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("ebb index: exit %d, %q; want its help", code, out)
	}
	code, _, errOut := indexCLI(url, "index", "create", "x", "--table-bucket", "1h", "--partition-bucket", "7m", "--retention", "1h")
	if code != 1 || !strings.Contains(errOut, "--table-bucket 1h must be a multiple of --partition-bucket 7m") {
		t.Errorf("create with a bad bucket: exit %d, %q", code, errOut)
	}
}

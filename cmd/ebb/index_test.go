package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// indexAPIServer serves the index API over a Pebble store.
func indexAPIServer(t *testing.T) (string, store.Store) {
	t.Helper()
	st := testbackend.Pebble(t, nil)
	svc, err := timeseries.New(timeseries.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
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
	if out := ok("index", "create", "events", "--table-bucket", "1h", "--partition-bucket", "10m", "--retention", "3h", "--runway", "1"); !strings.Contains(out, "index events: 5 shards") {
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
	if out := ok("index", "apply", "events"); !strings.Contains(out, "Applied for index events: 1 to create") {
		t.Errorf("apply: %q", out)
	}
	if out := ok("index", "plan", "events"); !strings.Contains(out, "No changes") {
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
	if out := ok("index", "delete", "events"); !strings.Contains(out, "deleted") {
		t.Errorf("delete: %q", out)
	}
	if code, _, errOut := indexCLI(url, "index", "show", "events"); code == 0 || !strings.Contains(errOut, "not_found") {
		t.Errorf("show after delete: %d %q", code, errOut)
	}
}

func TestBenchCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "--events", "500", "--queries", "20", "--expire-rows", "300", "--dir", t.TempDir()}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"ingest", "500 events", "query", "expire: drop shard", "expire: row deletes", "faster than deleting"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("bench output lacks %q:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("progress bar drawn on a non-terminal: %q", stderr.String())
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
		DropSpeedup float64 `json:"drop_speedup"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Results) != 4 || rep.Results[0].Ops != 500 || rep.DropSpeedup <= 0 {
		t.Fatalf("bench --json: %+v %v\n%s", rep, err, stdout.String())
	}
	if code := run([]string{"bench", "--limit", "0"}, &stdout, &stderr); code == 0 {
		t.Error("bench --limit 0 accepted")
	}
}

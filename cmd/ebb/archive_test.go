package main

import (
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// TestReleaseArchiveConfirms: releasing a restored shard drops a table
// that queries read, so it keeps the rule of destructive commands: without
// a terminal it refuses unless --yes, at a terminal it says what it drops
// and goes ahead only on "yes", and --yes goes ahead at once. A shard that
// is not restored is refused before anything is asked.
func TestReleaseArchiveConfirms(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	clk := storetest.NewClock(t0)
	st := testbackend.Pebble(t, clk.Now)
	svc, err := timeseries.New(t.Context(), st, timeseries.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Features: []server.Feature{server.Indexes(svc)}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	base := ts.URL
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(t.TempDir())}).String()
	ok(t, base, "index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "24h", "--archive-to", loc)
	ok(t, base, "index", "write", "ev", "--index-id", "a", "--event-id", "e1", "--timestamp", t0.Add(-23*time.Hour+time.Minute).Format(time.RFC3339))
	shard := shardmgr.ShardName("ev", t0.Add(-23*time.Hour))
	clk.Set(t0.Add(2 * time.Hour))
	if err := svc.Manager().RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	restored := func() bool {
		return strings.Contains(ok(t, base, "index", "query", "ev", "--index-id", "a"), "e1")
	}
	if restored() {
		t.Fatal("setup: the shard was not dropped")
	}
	release := []string{"index", "release-archive", "ev", shard}

	notAtTerminal(t)
	fails(t, base, "shard "+shard+" is not restored from its archive", release...)
	ok(t, base, "index", "restore-archive", "ev", shard)
	if !restored() {
		t.Fatal("setup: the restored shard is not read")
	}
	fails(t, base, "needs confirmation, and standard input is not a terminal: pass --yes to confirm", release...)
	if !restored() {
		t.Fatal("refused without a terminal, yet the shard is gone")
	}
	atTerminal(t, "no\n")
	code, _, errOut := cli(append([]string{"--server", base}, release...)...)
	if code != 1 || !strings.Contains(errOut, "Release restored shard "+shard+" of index ev, dropping its 1 row(s)") || !strings.Contains(errOut, "not confirmed; nothing was changed") {
		t.Fatalf("answered no at a terminal: exit %d, %q", code, errOut)
	}
	if !restored() {
		t.Fatal("not confirmed, yet the shard is gone")
	}
	atTerminal(t, "yes\n")
	if out := ok(t, base, release...); !strings.Contains(out, "restored shard "+shard+" released") {
		t.Fatalf("confirmed: %q", out)
	}
	if restored() {
		t.Fatal("confirmed at a terminal, yet the shard is read")
	}
	// Again, with --yes and no terminal.
	ok(t, base, "index", "restore-archive", "ev", shard)
	notAtTerminal(t)
	ok(t, base, append(release, "--yes")...)
	if restored() {
		t.Fatal("--yes, yet the shard is read")
	}
}

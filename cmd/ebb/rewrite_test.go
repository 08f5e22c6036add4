package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/server"
)

// TestRewriteFlag changes a list feature's TTL and a shared table's
// default with --rewrite, once confirmed: each command prints the job it
// started, and show-feature and tables get print its end.
func TestRewriteFlag(t *testing.T) {
	ctx := context.Background()
	st := testbackend.Pebble(t, nil)
	svc, err := lists.New(ctx, st, lists.Options{CacheTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := multitable.New(ctx, st, multitable.Options{CacheTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Features: []server.Feature{server.Lists(svc), server.Tables(reg)}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	url := ts.URL

	// A rewrite deletes the rows its TTL has expired: of an existing
	// version or table it keeps the rule of destructive commands. A new
	// one has nothing to rewrite, and a default of 0 deletes nothing:
	// those ask nothing.
	notAtTerminal(t)
	ok(t, url, "lists", "create-feature", "user", "seen", "_", "--ttl", "1h", "--rewrite")
	ok(t, url, "lists", "add", "user", "seen", "_", "u-1", "a")
	ok(t, url, "tables", "create", "orders", "--default-ttl", "1h", "--rewrite")
	ok(t, url, "tables", "put", "orders", "o-1")
	fails(t, url, "pass --yes", "lists", "create-feature", "user", "seen", "_", "--ttl", "2h", "--rewrite")
	fails(t, url, "pass --yes", "tables", "create", "orders", "--default-ttl", "2h", "--rewrite")
	atTerminal(t, "no\n")
	for _, c := range [][]string{
		{"Rewrite the items of list feature", "lists", "create-feature", "user", "seen", "_", "--ttl", "2h", "--rewrite"},
		{"Rewrite the items of shared table orders put without a ttl of their own to default_ttl 2h, deleting those whose last write + 2h has passed", "tables", "create", "orders", "--default-ttl", "2h", "--rewrite"},
	} {
		if code, _, errOut := cli(append([]string{"--server", url}, c[1:]...)...); code != 1 || !strings.Contains(errOut, c[0]) || !strings.Contains(errOut, "not confirmed; nothing was changed") {
			t.Fatalf("%s, answered no: exit %d, %q", c[1:], code, errOut)
		}
	}
	if out := ok(t, url, "lists", "show-feature", "user", "seen", "_"); !strings.Contains(out, "1h") || strings.Contains(out, "rewrite") {
		t.Fatalf("a refused rewrite changed the feature: %q", out)
	}
	if out := ok(t, url, "tables", "get", "orders"); strings.Contains(out, "2h") {
		t.Fatalf("a refused rewrite changed the table: %q", out)
	}
	notAtTerminal(t)
	ok(t, url, "tables", "create", "orders", "--default-ttl", "0s", "--rewrite")
	ok(t, url, "tables", "create", "orders", "--default-ttl", "1h")

	if out := ok(t, url, "lists", "create-feature", "user", "seen", "_", "--ttl", "2h", "--rewrite", "--yes"); !strings.Contains(out, "rewrite to ttl 2h: running") {
		t.Fatalf("create-feature --rewrite printed %q", out)
	}
	atTerminal(t, "yes\n")
	if out := ok(t, url, "tables", "create", "orders", "--default-ttl", "2h", "--rewrite"); !strings.Contains(out, "rewrite to ttl 2h: running") {
		t.Fatalf("tables create --rewrite printed %q", out)
	}
	time.Sleep(5 * time.Millisecond) // past the other processes' caches
	if err := svc.RunRewrites(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := reg.RunRewrites(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, url, "lists", "show-feature", "user", "seen", "_"); !strings.Contains(out, "done, 1 rows visited (1 rewritten, 0 removed, 0 skipped)") || !strings.Contains(out, "finished ") {
		t.Fatalf("show-feature after the rewrite printed %q", out)
	}
	if out := ok(t, url, "tables", "get", "orders"); !strings.Contains(out, "rewrite:     rewrite to ttl 2h: done, 1 rows visited (1 rewritten") {
		t.Fatalf("tables get after the rewrite printed %q", out)
	}
}

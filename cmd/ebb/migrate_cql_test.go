package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/migrate/legacyopen"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/cql/cqltest"
)

// TestMigrateCQL migrates an index off a Cassandra table through the
// CLI, on a server on the CQL backend: the table of docs/migration.md
// (created from the docs' own statement), the mapping flags the docs
// show, rows expiring by the table's default TTL. A second migration
// reaches the same table through --legacy-endpoint, on a session of its
// own. It runs when EBB_TEST_BACKENDS selects cql, and then fails, never
// skips, without EBB_CQL_HOSTS.
func TestMigrateCQL(t *testing.T) {
	ctx := t.Context()
	st := cqltest.New(t, nil)
	hosts := cqltest.Require(t)
	session := st.Session()

	// The application's keyspace and table.
	ks := cqltest.Keyspace()
	t.Cleanup(func() {
		if err := cqltest.DropKeyspace(context.Background(), hosts, ks); err != nil {
			t.Errorf("drop %s: %v", ks, err)
		}
	})
	if err := session.Query(fmt.Sprintf(`CREATE KEYSPACE %q WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`, ks)).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	var create string
	for _, b := range sectionBlocks(t, filepath.Join("..", "..", "docs", "migration.md"), "A CQL legacy table") {
		if b.lang == "cql" {
			create = b.text
		}
	}
	if !strings.Contains(create, "shop.events_v1") {
		t.Fatalf("no CREATE TABLE shop.events_v1 in the docs' CQL section: %q", create)
	}
	create = strings.TrimSuffix(strings.TrimSpace(strings.ReplaceAll(create, "shop.", ks+".")), ";")
	if err := session.Query(create).ExecContext(ctx); err != nil {
		t.Fatalf("the docs' table: %v", err)
	}
	// One node: the table exists once its CREATE returns (the Store's
	// session waits for agreement in its own way; see store/cql).
	table := ks + ".events_v1"
	// 300 events over the last 10 hours, as the application wrote them:
	// no TTL given, so the table's default (a day) applies.
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i := range 300 {
		ts := now.Add(-10 * time.Hour).Add(time.Duration(i) * 2 * time.Minute)
		if err := session.Query(fmt.Sprintf(`INSERT INTO %s (account, ts, event_id, body) VALUES (?, ?, ?, ?)`, table),
			fmt.Sprintf("acct_%d", i%10), ts, fmt.Sprintf("e%05d", i), []byte(fmt.Sprintf("p%d", i))).ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
	}

	reg := prometheus.NewRegistry()
	db, err := ebb.Open(ctx, ebb.Options{Store: st, Registerer: reg, LegacyOpener: legacyopen.New(legacyopen.Options{Backend: st})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	srv, err := server.New(server.Options{DB: db, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	url := ts.URL

	ok(t, url, "index", "create", "events", "--table-bucket", "6h", "--partition-bucket", "1h", "--retention", "24h")
	mapping := []string{"--map-index-id", "account", "--map-sort-key", "ts", "--map-event-id", "event_id", "--map-payload", "body"}
	out := ok(t, url, append([]string{"index", "migrate", "events", "--legacy-cql-table", table, "--write-legacy", "--sample-percent", "100"}, mapping...)...)
	if !strings.Contains(out, "legacy CQL table "+table) {
		t.Fatalf("start: %q", out)
	}
	// A mapping the table does not fit is refused, saying why.
	ok(t, url, "index", "create", "other", "--table-bucket", "6h", "--partition-bucket", "1h", "--retention", "24h")
	fails(t, url, `"nope" must be a text column`, append([]string{"index", "migrate", "other", "--legacy-cql-table", table}, append(mapping, "--map-event-id", "nope")...)...)

	// A write goes to the legacy table too, with its expiry as TTL (and
	// to the shards: 30 of acct_1's 31 events are missing there).
	ok(t, url, "index", "write", "events", "--index-id", "acct_1", "--event-id", "new1", "--payload", "hello")
	var newestID string
	var ttl int
	// Newest first, as the table clusters.
	if err := session.Query(fmt.Sprintf(`SELECT event_id, TTL(body) FROM %s WHERE account = 'acct_1' LIMIT 1`, table)).ScanContext(ctx, &newestID, &ttl); err != nil {
		t.Fatalf("ebb's write in the legacy table: %v", err)
	}
	if newestID != "new1" || ttl < 86000 || ttl > 86401 {
		t.Fatalf("the legacy table's newest row is %s with TTL %d s, want new1 with about a day", newestID, ttl)
	}

	ok(t, url, "index", "migrate", "events", "--phase", "shadow-read")
	if out := ok(t, url, "index", "query", "events", "--index-id", "acct_1", "--all"); strings.Count(out, "\n") != 32 {
		t.Fatalf("shadow-read serves %d lines from the legacy table, want a header and 31 events:\n%s", strings.Count(out, "\n"), out)
	}
	if out := ok(t, url, "index", "migrate", "events"); !strings.Contains(out, "30 missing") {
		t.Fatalf("status before backfill:\n%s", out)
	}
	ok(t, url, "index", "migrate", "events", "--backfill", "--batch-size", "50")
	out = ok(t, url, "index", "migrate", "events")
	for _, want := range []string{"done: 301 scanned, 301 copied", "legacy rows still live: about 301", "cutover: ready"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status after backfill lacks %q:\n%s", want, out)
		}
	}
	// The newest TTL of the legacy table: the newest row, written now,
	// expires a day after its timestamp.
	m := regexp.MustCompile(`newest row expires (\S+);`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no newest expiry in the status:\n%s", out)
	}
	newest, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if d := newest.Sub(now.Add(24 * time.Hour)); d < -time.Minute || d > 2*time.Minute {
		t.Fatalf("legacy newest expiry %s, want about %s", newest, now.Add(24*time.Hour))
	}
	ok(t, url, "index", "migrate", "events", "--phase", "merged-read")
	if out := ok(t, url, "index", "query", "events", "--index-id", "acct_1", "--all"); strings.Count(out, "\n") != 32 {
		t.Fatalf("merged-read serves %d lines, want a header and 31 events:\n%s", strings.Count(out, "\n"), out)
	}
	ok(t, url, "index", "migrate", "events", "--phase", "cutover")
	ok(t, url, "index", "migrate", "events", "--end")

	// The same table on a session of its own, as from a server on
	// another backend.
	out = ok(t, url, append([]string{"index", "migrate", "other", "--legacy-cql-table", table, "--legacy-endpoint", strings.Join(hosts, ",")}, mapping...)...)
	if !strings.Contains(out, "phase shadow-write") {
		t.Fatalf("start through the endpoint: %q", out)
	}
	if out := ok(t, url, "index", "query", "other", "--index-id", "acct_2", "--all"); strings.Count(out, "\n") != 31 {
		t.Fatalf("the legacy table through the endpoint: %d lines, want a header and 30 events:\n%s", strings.Count(out, "\n"), out)
	}
	ok(t, url, "index", "migrate", "other", "--end", "--force")
}

package ebb_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// TestRootLinksNoRemoteBackend: an embedder of the embedded backend links
// neither remote backend, nor their clients: the root package leaves
// them, and the openers of legacy tables on them, to whoever chooses the
// backend (Options.Store, Options.LegacyOpener).
func TestRootLinksNoRemoteBackend(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list the root package's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/ebb-data/ebb").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != "github.com/ebb-data/ebb" {
		t.Fatalf("go list -deps named %d packages, not ending with the root: %q", len(deps), deps)
	}
	for _, p := range deps {
		for _, banned := range []string{"ebb/store/cql", "ebb/store/dynamo", "aws-sdk-go", "aws/smithy-go", "gocql"} {
			if strings.Contains(p, banned) {
				t.Errorf("the root package depends on %s", p)
			}
		}
	}
}

// TestMigrationWithoutLegacyOpener: a DB given no LegacyOpener refuses a
// migration off a DynamoDB or CQL table with migrate.ErrNoOpener (an
// invalid request, store.ErrInvalid), and still migrates an index off its
// own NAME_legacy table, which lives in ebb's store.
func TestMigrationWithoutLegacyOpener(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: memStore(t), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, _, err := db.Indexes().Create(t.Context(), timeseries.Config{Name: "ia", TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 168 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, legacy := range []migrate.LegacyConfig{
		{Kind: migrate.KindDynamoDB, Table: "events_v1", Mapping: &migrate.Mapping{
			IndexID: "pk", SortKey: "sk", SortKeyFormat: migrate.SortTimestampEventID, Payload: "body", TTL: "expires"}},
		{Kind: migrate.KindCQL, Table: "shop.events_v1", Endpoint: "127.0.0.1:9042", Mapping: &migrate.Mapping{
			IndexID: "account", SortKey: "ts", EventID: "event_id", Payload: "body"}},
	} {
		_, _, err := db.Migrations().Start(t.Context(), "ia", migrate.Settings{Legacy: legacy})
		if !errors.Is(err, migrate.ErrNoOpener) || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("a %s legacy table without an opener: %v, want migrate.ErrNoOpener and store.ErrInvalid", legacy.Kind, err)
		}
	}
	if _, err := db.Migrations().State(t.Context(), "ia"); !errors.Is(err, migrate.ErrNotMigrating) {
		t.Fatalf("a refused migration was recorded: %v", err)
	}
	st, created, err := db.Migrations().Start(t.Context(), "ia", migrate.Settings{Legacy: migrate.LegacyConfig{Kind: migrate.KindTable, Table: migrate.OwnTable("ia")}})
	if err != nil || !created || st.Phase != migrate.ShadowWrite {
		t.Fatalf("a migration off the index's own legacy table: %+v, created %v, %v", st, created, err)
	}
}

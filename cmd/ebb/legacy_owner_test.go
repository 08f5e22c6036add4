package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/timeseries"
)

// TestServeWarnsOfForeignLegacy: a migration started before only admin
// tokens could name another legacy source may read another index's
// legacy table; `ebb serve` with an auth file names each such migration
// in a warning, and none from the index's own table.
func TestServeWarnsOfForeignLegacy(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	db, err := ebb.Open(t.Context(), ebb.Options{Dir: data, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	for index, legacy := range map[string]string{"ia": "ib_legacy", "ib": "ib_legacy", "ic": "ic_legacy"} {
		if _, _, err := db.Indexes().Create(t.Context(), timeseries.Config{Name: index, TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 168 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.Migrations().Start(t.Context(), index, migrate.Settings{Legacy: migrate.LegacyConfig{Kind: migrate.KindTable, Table: legacy}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(auth, []byte("tokens:\n  - token: s3cret\n    scopes: [admin]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, "--data", data, "--addr", "127.0.0.1:0", "--auth-file", auth)
	// stderr is copied from a pipe apart from the ready line on stdout, so
	// the warning, logged before it, may reach the buffer a little later.
	var warned []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		warned = warned[:0]
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(line, "legacy source other than the index's own") {
				warned = append(warned, line)
			}
		}
		if len(warned) > 0 && strings.Contains(p.stderr.String(), "serving") || time.Now().After(deadline) {
			break
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "index=ia") || !strings.Contains(warned[0], "table=ib_legacy") {
		t.Fatalf("warnings %q, want one for index ia reading ib_legacy; stderr:\n%s", warned, p.stderr)
	}
}

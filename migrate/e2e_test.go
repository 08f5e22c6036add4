package migrate_test

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/migrate/migratetest"
	"github.com/ebb-data/ebb/store/storetest"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envChildDir); dir != "" {
		// A backfill child of TestBackfillKilled.
		os.Exit(backfillChild(dir))
	}
	goleak.VerifyTestMain(m)
}

// TestEndToEndTable migrates an index off an embedded legacy table of
// 100,000 events.
func TestEndToEndTable(t *testing.T) {
	clock := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	migratetest.Run(t, migratetest.Env{
		Store:  testbackend.Pebble(t, clock.Now),
		Clock:  clock,
		Legacy: migrate.LegacyConfig{Kind: migrate.KindTable, Table: "legacy_events"},
		Events: 100000,
		IDs:    100,
	})
}

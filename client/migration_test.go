package client_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

// TestMigration walks an index through a migration off an embedded
// legacy table over HTTP: start, import, phases (one refused), backfill,
// cutover, end.
func TestMigration(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, eventsToken)
	root := e.client(t, rootToken)
	if _, _, err := root.CreateIndex(ctx, "events", client.IndexConfig{TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 3 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Migration(ctx, "events"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("migration of an index that does not migrate: %v", err)
	}
	m, created, err := c.StartMigration(ctx, "events", client.MigrationSettings{
		Legacy: client.LegacyTable{Kind: "table", Table: "events_legacy"}, WriteLegacy: true, SamplePercent: 100,
	})
	if err != nil || !created || m.Phase != client.PhaseShadowWrite {
		t.Fatalf("start: %+v %v %v", m, created, err)
	}
	now := time.Now()
	var rows []client.LegacyRow
	for i := range 50 {
		rows = append(rows, client.LegacyRow{IndexID: "a", EventID: fmt.Sprintf("e%02d", i), Timestamp: now.Add(-time.Hour).Add(time.Duration(i) * time.Second), Payload: []byte("x")})
	}
	if n, err := c.WriteLegacyRows(ctx, "events", rows); err != nil || n != 50 {
		t.Fatalf("legacy rows: %d, %v", n, err)
	}
	if _, err := c.SetMigrationPhase(ctx, "events", client.PhaseShadowRead, false); err != nil {
		t.Fatal(err)
	}
	page, err := c.QueryEvents(ctx, "events", client.EventQuery{IndexID: "a", Limit: 100})
	if err != nil || len(page.Events) != 50 {
		t.Fatalf("shadow-read query: %d events, %v", len(page.Events), err)
	}
	if _, err := c.SetMigrationPhase(ctx, "events", client.PhaseCutover, false); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("skipping to cutover: %v", err)
	}
	if _, err := c.StartBackfill(ctx, "events", client.BackfillOptions{BatchSize: 10}); err != nil {
		t.Fatal(err)
	}
	for m, err = c.Migration(ctx, "events"); err == nil && m.BackfillRunning; m, err = c.Migration(ctx, "events") {
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || m.Backfill == nil || !m.Backfill.Done || m.Backfill.Copied != 50 || !m.CutoverReady {
		t.Fatalf("after backfill: %+v, %v", m.Backfill, err)
	}
	if err := c.StopBackfill(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{client.PhaseMergedRead, client.PhaseCutover} {
		if m, err = c.SetMigrationPhase(ctx, "events", p, false); err != nil || m.Phase != p {
			t.Fatalf("to %s: %+v, %v", p, m, err)
		}
	}
	if err := c.EndMigration(ctx, "events", false); err != nil {
		t.Fatal(err)
	}
	page, err = c.QueryEvents(ctx, "events", client.EventQuery{IndexID: "a", Limit: 100})
	if err != nil || len(page.Events) != 50 {
		t.Fatalf("after the migration: %d events, %v", len(page.Events), err)
	}
}

package ebb_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/timeseries"
)

// TestBackupRestore takes a backup of a serving DB, restores it into a new
// directory and checks that the data and ebb's own state (index config,
// shards) came back, and that Restore refuses a non-empty directory.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := ebb.Open(ctx, ebb.Options{Dir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, _, err := db.Indexes().Create(ctx, timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Indexes().Put(ctx, "ev", []timeseries.Event{{IndexID: "a", EventID: "e1", Timestamp: now, Payload: []byte("p")}}); err != nil {
		t.Fatal(err)
	}
	id := lists.FeatureID{EntityType: "user", Name: "seen", Version: "v1"}
	if _, _, err := db.Lists().CreateFeature(ctx, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Lists().Add(ctx, id, "u1", []lists.Item{{Value: []byte("x"), Timestamp: now}}); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup")
	b, err := db.Backup(ctx, backup)
	if err != nil {
		t.Fatal(err)
	}
	if b.Bytes <= 0 {
		t.Fatalf("backup of %d bytes", b.Bytes)
	}
	if _, err := db.Backup(ctx, backup); err == nil {
		t.Fatal("a second backup into the same directory succeeded")
	}
	// Written after the backup: not in it.
	if _, err := db.Indexes().Put(ctx, "ev", []timeseries.Event{{IndexID: "a", EventID: "e2", Timestamp: now, Payload: []byte("p")}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if err := ebb.Restore(backup, filepath.Join(dir, "data")); !errors.Is(err, ebb.ErrNotEmpty) {
		t.Fatalf("restore over the live data: %v, want ErrNotEmpty", err)
	}
	restored := filepath.Join(dir, "restored")
	if err := ebb.Restore(backup, restored); err != nil {
		t.Fatal(err)
	}
	db2, err := ebb.Open(ctx, ebb.Options{Dir: restored, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	idx, err := db2.Indexes().Get(ctx, "ev")
	if err != nil || len(idx.Shards) == 0 {
		t.Fatalf("restored index: %+v, %v", idx, err)
	}
	page, err := db2.Indexes().Query(ctx, "ev", timeseries.Query{IndexID: "a", From: now.Add(-time.Minute), To: now.Add(time.Minute), Limit: 10})
	if err != nil || len(page.Events) != 1 || page.Events[0].EventID != "e1" {
		t.Fatalf("restored events: %+v, %v; want e1 alone", page.Events, err)
	}
	items, err := db2.Lists().Get(ctx, id, "u1", time.Time{}, 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("restored list: %v, %v", items, err)
	}
	if err := ebb.Restore(t.TempDir(), filepath.Join(dir, "other")); err == nil {
		t.Fatal("restore from a directory that is no backup succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Fatal("a refused restore created the data directory")
	}
}

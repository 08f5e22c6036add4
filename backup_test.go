package ebb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/lists"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
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
	id := lists.FeatureID{EntityType: "user", Feature: "seen", Version: "v1"}
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

// backupWithSSTAndWAL takes a backup whose sstables hold the events of
// index_id "flushed" (written, then flushed when the store reopened) and
// whose write-ahead log holds those of "logged" (written just before the
// backup), each with an incompressible payload that names it, so that a
// test can find it in the files. It returns the backup's directory.
func backupWithSSTAndWAL(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	put := func(db *ebb.DB, id string) {
		var evs []timeseries.Event
		for i := range 40 {
			evs = append(evs, timeseries.Event{IndexID: id, EventID: fmt.Sprintf("e%03d", i), Timestamp: time.Now(), Payload: namedPayload(id, i)})
		}
		if _, err := db.Indexes().Put(ctx, "ev", evs); err != nil {
			t.Fatal(err)
		}
	}
	db, err := ebb.Open(ctx, ebb.Options{Dir: data, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Indexes().Create(ctx, timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	put(db, "flushed")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening replays the log into a memtable and flushes it.
	db, err = ebb.Open(ctx, ebb.Options{Dir: data, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put(db, "logged")
	backup := filepath.Join(dir, "backup")
	if _, err := db.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}
	return backup
}

// namedPayload is the payload of event i of index_id id: 256
// pseudo-random bytes seeded by both, which no compression shrinks.
func namedPayload(id string, i int) []byte {
	p := make([]byte, 256)
	x := uint64(i+1)*0x9E3779B97F4A7C15 ^ uint64(len(id))<<40 ^ uint64(id[0])<<48
	for j := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[j] = byte(x)
	}
	return p
}

// fileHolding returns the path of the file in dir, with the suffix, that
// holds the payload of event i of id, and the offset of the payload in it.
func fileHolding(t *testing.T, dir, suffix, id string, i int) (string, int) {
	t.Helper()
	want := namedPayload(id, i)[64:128]
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if at := bytes.Index(b, want); at >= 0 {
			return p, at
		}
	}
	t.Fatalf("no %s file in %s holds the payload of %s/%d (%v)", suffix, dir, id, i, paths)
	return "", 0
}

// restoreRefused restores backup into a new directory and checks that it
// is refused with an error matching target and naming file, and that
// nothing was written.
func restoreRefused(t *testing.T, backup string, target error, file string) error {
	t.Helper()
	data := filepath.Join(t.TempDir(), "restored")
	err := ebb.Restore(backup, data)
	if !errors.Is(err, target) || !strings.Contains(err.Error(), filepath.Base(file)) {
		t.Fatalf("restore: %v, want an error matching %v naming %s", err, target, filepath.Base(file))
	}
	if _, serr := os.Stat(data); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("a refused restore left %s behind: %v", data, serr)
	}
	t.Logf("refused: %v", err)
	return err
}

// TestRestoreRefusesCorruptSSTable flips one byte inside an sstable's data
// block in a backup: Restore must refuse it, naming the file, and write
// nothing.
func TestRestoreRefusesCorruptSSTable(t *testing.T) {
	backup := backupWithSSTAndWAL(t)
	path, at := fileHolding(t, backup, ".sst", "flushed", 20)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at+10] ^= 0x01
	// The backup's sstables are hard links to the live ones: write a new
	// file rather than into the shared inode.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = restoreRefused(t, backup, ebb.ErrBackupDamaged, path)
	if !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("restore of a corrupt sstable: %v, want a checksum mismatch", err)
	}
}

// TestRestoreRefusesDamagedWAL truncates, then removes, the write-ahead
// log of a backup that holds acknowledged writes only there: Restore must
// refuse both rather than restore without them.
func TestRestoreRefusesDamagedWAL(t *testing.T) {
	t.Run("truncated", func(t *testing.T) {
		backup := backupWithSSTAndWAL(t)
		path, at := fileHolding(t, backup, ".log", "logged", 20)
		if err := os.Truncate(path, int64(at)); err != nil {
			t.Fatal(err)
		}
		restoreRefused(t, backup, ebb.ErrBackupDamaged, path)
	})
	t.Run("missing", func(t *testing.T) {
		backup := backupWithSSTAndWAL(t)
		path, _ := fileHolding(t, backup, ".log", "logged", 20)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		restoreRefused(t, backup, ebb.ErrBackupDamaged, path)
	})
}

// TestRestoreIntoItsOwnBackup restores a backup into a directory inside
// it: refused with ErrRestoreTarget, and the backup is left as it was.
func TestRestoreIntoItsOwnBackup(t *testing.T) {
	backup := backupWithSSTAndWAL(t)
	before := treeOf(t, backup)
	for _, data := range []string{filepath.Join(backup, "restored"), backup + "/./x/../restored"} {
		err := ebb.Restore(backup, data)
		if !errors.Is(err, ebb.ErrRestoreTarget) {
			t.Fatalf("restore into %s: %v, want ErrRestoreTarget", data, err)
		}
		if after := treeOf(t, backup); !slices.Equal(before, after) {
			t.Fatalf("a refused restore changed the backup: %d entries before, %d after", len(before), len(after))
		}
	}
}

// treeOf lists every path under dir.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRestoreWithoutManifest restores a backup whose manifest was removed
// (as one taken before backups carried one): refused by default, accepted
// with RestoreOptions.NoManifest, which still checks every sstable block.
func TestRestoreWithoutManifest(t *testing.T) {
	backup := backupWithSSTAndWAL(t)
	if err := os.Remove(filepath.Join(backup, ebbpebble.ManifestName)); err != nil {
		t.Fatal(err)
	}
	restoreRefused(t, backup, ebb.ErrBackupNoManifest, ebbpebble.ManifestName)
	data := filepath.Join(t.TempDir(), "restored")
	if err := ebb.RestoreWith(context.Background(), backup, data, ebb.RestoreOptions{NoManifest: true}); err != nil {
		t.Fatalf("restore without a manifest, accepted: %v", err)
	}
	ctx := context.Background()
	db, err := ebb.Open(ctx, ebb.Options{Dir: data, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range []string{"flushed", "logged"} {
		page, err := db.Indexes().Query(ctx, "ev", timeseries.Query{IndexID: id, From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute), Limit: 100})
		if err != nil || len(page.Events) != 40 {
			t.Fatalf("restored %s: %d events, %v; want 40", id, len(page.Events), err)
		}
	}
}

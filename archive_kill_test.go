package ebb_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// archiveKillEnv carries the archive kill test's directory to its child.
const archiveKillEnv = "EBB_TEST_ARCHIVE_KILL_DIR"

// archiveKillEvents is how many events the killed archive's shard holds:
// enough that its export is under way for a while.
const archiveKillEvents = 30_000

// archiveKillStart is the start of the shard the child archives.
var archiveKillStart = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)

// archiveKillEvent is the i-th event of the shard.
func archiveKillEvent(i int) timeseries.Event {
	return timeseries.Event{IndexID: fmt.Sprintf("acct%d", i%7), EventID: fmt.Sprintf("e%06d", i),
		Timestamp: archiveKillStart.Add(time.Duration(i) * 100 * time.Millisecond), Payload: fmt.Appendf(nil, "payload %d", i)}
}

// TestArchiveResumesAfterProcessKill kills a process in the middle of an
// archive (SIGKILL, as soon as the archive's temporary file or its object
// appears in the directory, before its manifest), then reopens its data
// directory in this process and reconciles: the shard is archived again
// from the table, verified and only then dropped, its rows read back from
// the object are the events written, and nothing the killed archive left
// is still there.
func TestArchiveResumesAfterProcessKill(t *testing.T) {
	if dir := os.Getenv(archiveKillEnv); dir != "" {
		archiveKillChild(t, dir)
		return
	}
	dir := t.TempDir()
	runKilledChild(t, archiveKillEnv, dir)
	archDir := filepath.Join(dir, "archive")
	shard := shardmgr.ShardName("ev", archiveKillStart)
	if _, err := os.Stat(filepath.Join(archDir, "ev", shard+".manifest.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the killed archive has a manifest (%v): it was not killed mid-archive", err)
	}
	left, _ := filepath.Glob(filepath.Join(archDir, ".tmp-*"))
	obj, _ := filepath.Glob(filepath.Join(archDir, "ev", "*.parquet"))
	if len(left)+len(obj) == 0 {
		t.Fatal("the killed archive left nothing: the kill came before it began")
	}

	var mu sync.Mutex
	at := archiveKillStart.Add(4 * time.Hour)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	db, err := ebb.Open(t.Context(), ebb.Options{Dir: filepath.Join(dir, "data"), Now: now, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, _, err := db.Indexes().Reconcile(t.Context(), "ev", shardmgr.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Indexes().ShardStats(t.Context(), shard); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("the shard after the resumed pass: %v, want it dropped", err)
	}
	ms, err := db.Indexes().Archives(t.Context(), "ev")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m archive.Manifest) bool { return m.Table == shard })
	if i < 0 || ms[i].Rows != archiveKillEvents || ms[i].Verified.IsZero() {
		t.Fatalf("archives after the resumed pass: %+v; want %s verified with %d rows", ms, shard, archiveKillEvents)
	}
	reader, err := archive.New(archive.Options{Store: testbackend.Pebble(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range archiveKillEvents {
		e := archiveKillEvent(i)
		want[e.IndexID+"/"+e.EventID] = fmt.Sprint(e.Timestamp.UnixMilli(), " ", string(e.Payload))
	}
	err = reader.ReadRows(context.Background(), ms[i], func(v []any) error {
		k := v[0].(string) + "/" + v[3].(string)
		if got := fmt.Sprint(v[2].(time.Time).UnixMilli(), " ", string(v[4].([]byte))); want[k] != got {
			return fmt.Errorf("%s reads back as %q, want %q", k, got, want[k])
		}
		delete(want, k)
		return nil
	})
	if err != nil || len(want) != 0 {
		t.Fatalf("read back: %d events missing: %v", len(want), err)
	}
	if left, _ := filepath.Glob(filepath.Join(archDir, ".tmp-*")); len(left) != 0 {
		t.Errorf("the killed archive's temporary files are still there: %v", left)
	}
}

// archiveKillChild is the child side of TestArchiveResumesAfterProcessKill:
// it writes the shard, moves its clock past the shard's retention and
// reconciles, and kills itself once the archive has begun.
func archiveKillChild(t *testing.T, dir string) {
	ctx := context.Background()
	var mu sync.Mutex
	at := archiveKillStart
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	db, err := ebb.Open(ctx, ebb.Options{Dir: filepath.Join(dir, "data"), Now: now, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	archDir := filepath.Join(dir, "archive")
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(archDir)}).String()
	if _, _, err := db.Indexes().Create(ctx, timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: time.Hour,
		Retention: 2 * time.Hour, Archive: &timeseries.ArchiveConfig{To: loc}}); err != nil {
		t.Fatal(err)
	}
	for start := 0; start < archiveKillEvents; start += 1000 {
		var evs []timeseries.Event
		for i := start; i < start+1000; i++ {
			evs = append(evs, archiveKillEvent(i))
		}
		if _, err := db.Indexes().WriteEvents(ctx, "ev", evs); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		for {
			tmp, _ := filepath.Glob(filepath.Join(archDir, ".tmp-*"))
			obj, _ := filepath.Glob(filepath.Join(archDir, "ev", "*.parquet"))
			if len(tmp)+len(obj) > 0 {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for range 8 { // to four hours on, half an hour at a time
		mu.Lock()
		at = at.Add(30 * time.Minute)
		mu.Unlock()
		if _, _, err := db.Indexes().Reconcile(ctx, "ev", shardmgr.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the archive ended before the kill")
}

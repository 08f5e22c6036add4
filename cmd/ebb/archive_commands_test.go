package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/timeseries"
)

// TestIndexArchiveCommands lists, restores and releases an archived shard
// from the command line: `ebb index archives` shows the shard the manager
// archived before its drop, `ebb index restore-archive` brings it back,
// which the listing then shows, and `ebb index release-archive --yes` lets it
// go again.
func TestIndexArchiveCommands(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	at := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	db, err := ebb.Open(ctx, ebb.Options{Dir: t.TempDir(), Now: now, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := server.New(server.Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	ok(t, ts.URL, "index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "2h", "--archive-to", loc)
	if _, err := db.Indexes().WriteEvents(ctx, "ev", []timeseries.Event{
		{IndexID: "a", EventID: "e1", Timestamp: at.Add(time.Minute)},
		{IndexID: "a", EventID: "e2", Timestamp: at.Add(2 * time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}
	shard := shardmgr.ShardName("ev", at)
	for range 8 { // four hours, half an hour at a time
		mu.Lock()
		at = at.Add(30 * time.Minute)
		mu.Unlock()
		if _, _, err := db.Indexes().Reconcile(ctx, "ev", shardmgr.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var list struct {
		Archives []struct {
			Table    string
			Rows     int64
			Restored bool
		}
	}
	archived := func() (rows int64, restored, found bool) {
		t.Helper()
		if err := json.Unmarshal([]byte(ok(t, ts.URL, "index", "archives", "ev", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		for _, a := range list.Archives {
			if a.Table == shard {
				return a.Rows, a.Restored, true
			}
		}
		return 0, false, false
	}
	if rows, restored, found := archived(); !found || rows != 2 || restored {
		t.Fatalf("archives of ev: %+v; want %s with 2 rows, not restored", list, shard)
	}
	if out := ok(t, ts.URL, "index", "archives", "ev"); !strings.Contains(out, shard) || !strings.Contains(out, loc+"/ev/"+shard+".parquet") {
		t.Fatalf("ebb index archives:\n%s", out)
	}
	if out := ok(t, ts.URL, "index", "restore-archive", "ev", shard); !strings.Contains(out, "shard "+shard+" restored from "+loc+": 2 rows") {
		t.Fatalf("ebb index restore-archive: %q", out)
	}
	if _, restored, _ := archived(); !restored {
		t.Fatalf("the listing after the restore: %+v", list)
	}
	if out := ok(t, ts.URL, "index", "release-archive", "--yes", "ev", shard); !strings.Contains(out, "restored shard "+shard+" released") {
		t.Fatalf("ebb index release-archive: %q", out)
	}
	if _, restored, found := archived(); !found || restored {
		t.Fatalf("the listing after the release: %+v", list)
	}
}

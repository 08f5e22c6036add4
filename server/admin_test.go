package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/faultfs"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

type adminTable struct {
	Name     string `json:"name"`
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
	Capacity string `json:"capacity"`
}

func getAdminTables(t *testing.T, url, token string) []adminTable {
	t.Helper()
	r := call(t, "GET", url+"/v1/admin/tables", token, nil)
	if r.status != 200 {
		t.Fatalf("admin tables: %d %s", r.status, r.body)
	}
	var out struct {
		Tables []adminTable `json:"tables"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.Tables == nil {
		t.Fatalf("admin tables body %s: %v", r.body, err)
	}
	// ebb's own tables (metadata, the expiry index, shared-table items)
	// are left out: the tests are about the tables they make.
	var mine []adminTable
	for _, tb := range out.Tables {
		if !strings.HasPrefix(tb.Name, "ebb_") {
			mine = append(mine, tb)
		}
	}
	return mine
}

func TestAdminTables(t *testing.T) {
	st := testbackend.Pebble(t, nil)
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, nil)})
	if got := getAdminTables(t, ts.URL, ""); len(got) != 0 {
		t.Fatalf("empty store lists %v", got)
	}

	ctx := context.Background()
	spec := func(name string) store.TableSpec {
		return store.TableSpec{
			Name:         name,
			PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}},
			Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
			Values:       []store.Column{{Name: "v", Type: store.TypeBytes}},
		}
	}
	for _, name := range []string{"hot", "cold"} {
		if err := st.CreateTable(ctx, spec(name)); err != nil {
			t.Fatal(err)
		}
	}
	var batch []store.Mutation
	for i := range 25 {
		batch = append(batch, store.Mutation{
			Partition: []any{fmt.Sprint("p", i%3)}, Clustering: []any{int64(i)},
			Cells: []store.Cell{{Column: "v", Value: []byte("0123456789")}},
		})
	}
	if err := st.Write(ctx, "hot", batch); err != nil {
		t.Fatal(err)
	}
	if err := st.SetCapacity(ctx, "hot", store.Capacity{Mode: store.Provisioned, ReadUnits: 5, WriteUnits: 5}); err != nil {
		t.Fatal(err)
	}

	got := getAdminTables(t, ts.URL, "")
	if len(got) != 2 || got[0].Name != "cold" || got[1].Name != "hot" {
		t.Fatalf("tables %+v", got)
	}
	cold, hot := got[0], got[1]
	if cold.Rows != 0 || cold.Capacity != "on_demand" {
		t.Errorf("cold: %+v", cold)
	}
	// Bytes is the backend's disk estimate, which excludes data not yet
	// flushed from memory, so only its sign is certain here.
	if hot.Rows != 25 || hot.Bytes < 0 || hot.Capacity != "provisioned" {
		t.Errorf("hot: %+v", hot)
	}

	// Dropped tables disappear from the listing.
	if err := st.DropTable(ctx, "hot"); err != nil {
		t.Fatal(err)
	}
	if got := getAdminTables(t, ts.URL, ""); len(got) != 1 || got[0].Name != "cold" {
		t.Fatalf("after drop: %+v", got)
	}
}

func TestAdminTablesNeedsAdminScope(t *testing.T) {
	ts, _ := start(t, server.Options{Auth: loadAuth(t, authYAML), Admin: adminFor(t, testbackend.Pebble(t, nil), nil)})
	if got := getAdminTables(t, ts.URL, "root-token"); len(got) != 0 {
		t.Fatalf("tables %+v", got)
	}
	for _, tok := range []string{"all-token", "events-token"} {
		if r := call(t, "GET", ts.URL+"/v1/admin/tables", tok, nil); r.status != 403 {
			t.Errorf("%s: %d", tok, r.status)
		}
	}
}

func TestAdminBackup(t *testing.T) {
	dir := t.TempDir()
	db, err := ebb.Open(t.Context(), ebb.Options{Dir: filepath.Join(dir, "data"), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ts, _ := start(t, server.Options{DB: db})
	to := filepath.Join(dir, "b1")
	r := call(t, "POST", ts.URL+"/v1/admin/backup", "", strings.NewReader(`{"to":"`+to+`"}`))
	var out struct {
		Dir   string `json:"dir"`
		Bytes int64  `json:"bytes"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &out) != nil || out.Dir != to || out.Bytes <= 0 {
		t.Fatalf("backup: %d %s", r.status, r.body)
	}
	if r := call(t, "POST", ts.URL+"/v1/admin/backup", "", strings.NewReader(`{"to":"`+to+`"}`)); r.status != 409 {
		t.Fatalf("backup into an existing directory: %d %s", r.status, r.body)
	}
	if r := call(t, "POST", ts.URL+"/v1/admin/backup", "", strings.NewReader(`{"to":"relative/dir"}`)); r.status != 400 {
		t.Fatalf("backup to a relative path: %d %s", r.status, r.body)
	}
}

// TestAdminBackupBadTarget posts backups whose `to` the server cannot or
// must not write: each is the client's mistake (400 invalid_argument), and
// none leaves anything behind.
func TestAdminBackupBadTarget(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	db, err := ebb.Open(t.Context(), ebb.Options{Dir: data, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ts, _ := start(t, server.Options{DB: db})
	for _, tc := range []struct{ name, to string }{
		{"under /proc", "/proc/ebb-backup-test"},
		{"under a file", "/dev/null/x"},
		{"holding NUL", filepath.Join(dir, "a\x00b")},
		{"inside the data directory", filepath.Join(data, "backup")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"to": tc.to})
			r := call(t, "POST", ts.URL+"/v1/admin/backup", "", strings.NewReader(string(body)))
			if r.status != 400 || r.errorCode(t) != server.CodeInvalidArgument {
				t.Fatalf("backup to %q: %d %s, want 400 invalid_argument", tc.to, r.status, r.body)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(data, "backup")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused backup inside the data directory left %v", err)
	}
}

// TestAdminBackupFullDisk takes backups with no room for them: on a target
// disk that is full (ENOSPC), and while the data directory's disk is below
// its free-space floor (the checkpoint's flush of the write-ahead log is a
// write there). Both are answered 507 insufficient_storage, as any write on
// a full disk, the server goes on, and no partial backup is left behind.
func TestAdminBackupFullDisk(t *testing.T) {
	const floor = 8 << 20
	var targetFull atomic.Bool
	mem := vfs.NewMem()
	// The target disk, /bk, refuses writes once targetFull is set.
	bk := faultfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if targetFull.Load() && strings.HasPrefix(op.Path, "/bk/") && faultfs.Write.Matches(op.Kind) {
			return fmt.Errorf("test: %s: %w", op.Path, syscall.ENOSPC)
		}
		return nil
	}))
	disk := faultfs.NewQuota(bk, "/d", 1<<30)
	st, err := ebbpebble.Open("/d/db", ebbpebble.Options{FS: disk, MinFreeBytes: floor})
	if err != nil {
		t.Fatal(err)
	}
	db, err := ebb.Open(t.Context(), ebb.Options{Store: st, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ts, _ := start(t, server.Options{DB: db})
	if r := call(t, "PUT", ts.URL+"/v1/tables/notes", "", strings.NewReader(`{}`)); r.status/100 != 2 {
		t.Fatalf("create table: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		name string
		to   string
		fill func()
	}{
		{"target disk full", "/bk/b1", func() { targetFull.Store(true) }},
		{"data disk below the floor", "/d/b2", func() { targetFull.Store(false); disk.SetQuota(disk.Used() + floor/2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fill()
			r := call(t, "POST", ts.URL+"/v1/admin/backup", "", strings.NewReader(`{"to":"`+tc.to+`"}`))
			if r.status != 507 || r.errorCode(t) != server.CodeInsufficientStorage {
				t.Fatalf("backup to %s: %d %s, want 507 insufficient_storage", tc.to, r.status, r.body)
			}
			if _, err := mem.Stat(tc.to); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a failed backup left %s behind: %v", tc.to, err)
			}
			if r := call(t, "GET", ts.URL+"/v1/tables/notes", "", nil); r.status != 200 {
				t.Fatalf("read after the failed backup: %d %s", r.status, r.body)
			}
		})
	}
}

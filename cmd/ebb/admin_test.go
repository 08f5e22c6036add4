package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAdminCommands(t *testing.T) {
	url := fullServer(t, true)
	root := []string{"--token", "root"}
	ok(t, url, append(root, "tables", "create", "tenant_a")...)
	ok(t, url, append(root, "tables", "put", "tenant_a", "k", "--attributes", `{"n": 1}`)...)

	out := ok(t, url, append(root, "admin", "tables")...)
	if !strings.Contains(out, "ebb_meta") || !strings.Contains(out, "ebb_items") || !strings.Contains(out, "SHARED TABLE") || !strings.Contains(out, "tenant_a") {
		t.Fatalf("admin tables: %q", out)
	}
	var tables struct {
		Tables        []struct{ Name string } `json:"tables"`
		LogicalTables []struct {
			Name  string `json:"name"`
			Items int    `json:"items"`
		} `json:"logical_tables"`
	}
	if err := json.Unmarshal([]byte(ok(t, url, append(root, "admin", "tables", "-o", "json")...)), &tables); err != nil ||
		len(tables.LogicalTables) != 1 || tables.LogicalTables[0].Items != 1 {
		t.Fatalf("admin tables as JSON: %+v %v", tables, err)
	}
	if out := ok(t, url, append(root, "admin", "cluster")...); !strings.Contains(out, "answered by replica ") || !strings.Contains(out, "shard-manager") {
		t.Fatalf("admin cluster: %q", out)
	}
	if out := ok(t, url, append(root, "admin", "metrics")...); !strings.Contains(out, "ebb_http_requests_total{") {
		t.Fatalf("admin metrics: %.300q", out)
	}

	// Health needs no token; ready comes once the shard manager has run.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, errOut := cli("--server", url, "health")
		if code == 0 {
			if out != url+": serving, ready\n" {
				t.Fatalf("health: %q", out)
			}
			break
		}
		if !strings.Contains(errOut, "serving but not ready") || time.Now().After(deadline) {
			t.Fatalf("health: exit %d, %q", code, errOut)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBackupRestore(t *testing.T) {
	url := fullServer(t, true)
	root := []string{"--token", "root"}
	ok(t, url, append(root, "tables", "create", "orders")...)
	ok(t, url, append(root, "tables", "put", "orders", "o-1", "--attributes", `{"total": 42}`)...)

	dir := filepath.Join(t.TempDir(), "backup")
	if out := ok(t, url, append(root, "backup", "--to", dir)...); !strings.HasPrefix(out, "backup of "+url+" in "+dir+": ") {
		t.Fatalf("backup: %q", out)
	}
	fails(t, url, "(conflict, HTTP 409)", append(root, "backup", "--to", dir)...)
	fails(t, url, "(permission_denied, HTTP 403)", "--token", "narrow", "backup", "--to", dir+"2")
	fails(t, url, "--to DIR is required", append(root, "backup")...)

	// Restore refuses a directory with anything in it, and restores into
	// a new one, which a server then opens with the data.
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, url, "pass a new or empty --data directory", "restore", "--from", dir, "--data", busy)
	fails(t, url, "are required", "restore", "--from", dir)
	data := filepath.Join(t.TempDir(), "restored")
	if out := ok(t, url, "restore", "--from", dir, "--data", data); !strings.Contains(out, "ebb serve --data "+data) {
		t.Fatalf("restore: %q", out)
	}
	restored := serveDir(t, data, false)
	if out := ok(t, restored, "tables", "get", "orders", "o-1"); !strings.Contains(out, `{"total":42}`) {
		t.Fatalf("restored item: %q", out)
	}
}

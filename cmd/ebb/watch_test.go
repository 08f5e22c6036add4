package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestWatchExpirations reads the log of expirations from the command
// line: a shared-table item that expired is printed, as a table and as
// JSON, with the cursor to go on from on standard error.
func TestWatchExpirations(t *testing.T) {
	url := fullServer(t, true)
	root := []string{"--token", "root"}
	ok(t, url, append(root, "tables", "create", "sessions", "--default-ttl", "1s", "--expiry", "sweep")...)
	ok(t, url, append(root, "tables", "put", "sessions", "s1")...)
	var page struct {
		Expirations []struct {
			Cursor, Kind, Name string
			Key                []string
		}
		Next string
	}
	for deadline := time.Now().Add(30 * time.Second); len(page.Expirations) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no expiration within 30 s")
		}
		time.Sleep(200 * time.Millisecond)
		if err := json.Unmarshal([]byte(ok(t, url, append(root, "watch", "expirations", "-o", "json")...)), &page); err != nil {
			t.Fatal(err)
		}
	}
	if e := page.Expirations[0]; e.Kind != "table" || e.Name != "sessions" || len(e.Key) != 1 || e.Key[0] != "s1" {
		t.Fatalf("expiration %+v", e)
	}
	code, out, errOut := cli(append([]string{"--server", url}, append(root, "watch", "expirations")...)...)
	if code != 0 || !strings.Contains(out, "table/sessions  s1") || !strings.Contains(errOut, "next: "+page.Next) {
		t.Fatalf("watch expirations: exit %d, %q, %q", code, out, errOut)
	}
	code, out, _ = cli(append([]string{"--server", url}, append(root, "watch", "expirations", "--after", page.Next)...)...)
	if code != 0 || strings.Contains(out, "s1") {
		t.Fatalf("after the last entry: exit %d, %q", code, out)
	}
}

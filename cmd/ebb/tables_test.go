package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTablesCommands(t *testing.T) {
	url := fullServer(t, false)

	if out := ok(t, url, "tables", "create", "orders", "--default-ttl", "720h"); out != "table orders created\n" {
		t.Fatalf("create: %q", out)
	}
	if out := ok(t, url, "tables", "create", "orders", "--default-ttl", "720h"); out != "table orders exists\n" {
		t.Fatalf("create again: %q", out)
	}
	// Without --default-ttl an existing table keeps its own; with another,
	// it changes in place.
	if out := ok(t, url, "tables", "create", "orders"); out != "table orders exists\n" {
		t.Fatalf("create again without --default-ttl: %q", out)
	}
	if out := ok(t, url, "tables", "get", "orders"); !strings.Contains(out, "default ttl: 720h\n") {
		t.Fatalf("default TTL after a create without --default-ttl: %q", out)
	}
	ok(t, url, "tables", "create", "orders", "--default-ttl", "1h")
	if out := ok(t, url, "tables", "get", "orders"); !strings.Contains(out, "default ttl: 1h\n") {
		t.Fatalf("default TTL after the change: %q", out)
	}
	ok(t, url, "tables", "create", "orders", "--default-ttl", "720h")
	fails(t, url, "(invalid_argument, HTTP 400)", "tables", "create", "no/slash")
	ok(t, url, "tables", "create", "..")
	if out := ok(t, url, "tables", "list"); !strings.Contains(out, "NAME") || !strings.Contains(out, "orders  720h") || !strings.Contains(out, "..  ") {
		t.Fatalf("list: %q", out)
	}
	if out := ok(t, url, "tables", "get", "orders"); !strings.Contains(out, "table:       orders\ndefault ttl: 720h\n") {
		t.Fatalf("get table: %q", out)
	}

	// Put from flags and from a file; keys with any character.
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Second).Format(time.RFC3339)
	if out := ok(t, url, "tables", "put", "orders", "o/1#?", "--timestamp", ts, "--attributes", `{"total": 42}`); !strings.HasPrefix(out, "put orders o/1#? (expires ") {
		t.Fatalf("put: %q", out)
	}
	file := filepath.Join(t.TempDir(), "attrs.json")
	if err := os.WriteFile(file, []byte(`{"total": 7, "lines": [1, 2]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, url, "tables", "put", "orders", "..", "--attributes-file", file, "--ttl", "0s"); out != "put orders .. (never expires)\n" {
		t.Fatalf("put from a file: %q", out)
	}
	ok(t, url, "tables", "put", "orders", "plain")
	fails(t, url, "not valid JSON", "tables", "put", "orders", "k", "--attributes", "{nope")
	fails(t, url, "(invalid_argument, HTTP 400)", "tables", "put", "orders", "k", "--attributes", "[1]")
	fails(t, url, "(not_found, HTTP 404)", "tables", "put", "nope", "k")

	out := ok(t, url, "tables", "get", "orders", "o/1#?")
	if !strings.Contains(out, "key:        o/1#?\ntimestamp:  "+ts+"\nexpires:    ") || !strings.Contains(out, `attributes: {"total":42}`) {
		t.Fatalf("get item: %q", out)
	}
	var item struct {
		Key        string          `json:"key"`
		Attributes json.RawMessage `json:"attributes"`
		ExpiresAt  *string         `json:"expires_at"`
	}
	var attrs bytes.Buffer
	if err := json.Unmarshal([]byte(ok(t, url, "tables", "get", "orders", "..", "-o", "json")), &item); err != nil || item.Key != ".." || item.ExpiresAt != nil ||
		json.Compact(&attrs, item.Attributes) != nil || attrs.String() != `{"total":7,"lines":[1,2]}` {
		t.Fatalf("get item as JSON: %+v %v", item, err)
	}

	// Items: pages, every page, after a time.
	code, out, errOut := cli("--server", url, "tables", "items", "orders", "--limit", "2")
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.HasPrefix(strings.Split(out, "\n")[1], "o/1#?") || !strings.Contains(errOut, "--page-token") {
		t.Fatalf("items: %d %q %q", code, out, errOut)
	}
	var page struct {
		Items []struct {
			Key string `json:"key"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(ok(t, url, "tables", "rows", "orders", "--all", "--limit", "1", "--output", "json")), &page); err != nil || len(page.Items) != 3 {
		t.Fatalf("rows --all: %+v %v", page, err)
	}
	if out := ok(t, url, "tables", "items", "orders", "--after=-30m"); strings.Contains(out, "o/1#?") || !strings.Contains(out, "plain") {
		t.Fatalf("items --after: %q", out)
	}

	if out := ok(t, url, "tables", "delete", "orders", "o/1#?"); out != "deleted orders o/1#?\n" {
		t.Fatalf("delete: %q", out)
	}
	fails(t, url, "(not_found, HTTP 404)", "tables", "get", "orders", "o/1#?")
	ok(t, url, "tables", "delete", "orders", "never-was")
	if out := ok(t, url, "tables", "drop", "orders", "--yes"); out != "table orders dropped\n" {
		t.Fatalf("drop: %q", out)
	}
	fails(t, url, "(not_found, HTTP 404)", "tables", "get", "orders")
}

// TestTablesConditionalCommands: put --if-absent and --if-version, patch,
// delete --if-version, and get of several keys in one request.
func TestTablesConditionalCommands(t *testing.T) {
	url := fullServer(t, false)
	ok(t, url, "tables", "create", "cas")
	ok(t, url, "tables", "put", "cas", "k", "--attributes", `{"a":1,"b":2}`, "--if-absent")
	fails(t, url, "(failed_precondition, HTTP 412)", "tables", "put", "cas", "k", "--if-absent")
	out := ok(t, url, "tables", "get", "cas", "k", "--output", "json")
	var it struct{ Version string }
	if err := json.Unmarshal([]byte(out), &it); err != nil || it.Version == "" {
		t.Fatalf("get: %q %v", out, err)
	}
	if out := ok(t, url, "tables", "get", "cas", "k"); !strings.Contains(out, "version:    "+it.Version+"\n") {
		t.Fatalf("get does not show the version: %q", out)
	}
	out = ok(t, url, "tables", "patch", "cas", "k", "--attributes", `{"b":null,"c":3}`, "--if-version", it.Version)
	if !strings.Contains(out, `attributes: {"a":1,"c":3}`) {
		t.Fatalf("patch: %q", out)
	}
	fails(t, url, "(failed_precondition, HTTP 412)", "tables", "put", "cas", "k", "--if-version", it.Version)
	fails(t, url, "(failed_precondition, HTTP 412)", "tables", "delete", "cas", "k", "--if-version", it.Version)
	fails(t, url, "(not_found, HTTP 404)", "tables", "patch", "cas", "none", "--attributes", `{"a":1}`)
	code, out, errOut := cli("--server", url, "tables", "get", "cas", "k", "none")
	if code != 0 || !strings.Contains(out, "key:        k\n") || !strings.Contains(errOut, "cas none: not found") {
		t.Fatalf("get of two keys: exit %d, %q %q", code, out, errOut)
	}
	ok(t, url, "tables", "delete", "cas", "k", "--if-version", "*")
	fails(t, url, "(not_found, HTTP 404)", "tables", "get", "cas", "k")
}

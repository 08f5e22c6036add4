package server

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// TestClientMessage: a client reads an error without the store
// sentinels its code conveys and without Go package names, however deep
// in the chain they are.
func TestClientMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{store.ErrNotFound, "not found"},
		{fmt.Errorf("%w: empty key", store.ErrInvalid), "empty key"},
		{&store.MutationError{Noun: "item", Index: 3, Err: fmt.Errorf("%w: value is 9 bytes, at most 8", store.ErrTooLarge)},
			"item 3: value is 9 bytes, at most 8"},
		{multitable.ErrNoTable, "no such table"},
		{fmt.Errorf("%w: table %q", multitable.ErrNoTable, "t"), `no such table: table "t"`},
		{fmt.Errorf("timeseries: index not found: %w: %q", store.ErrNotFound, "nope"), `index not found: "nope"`},
		{migrate.ErrNotMigrating, "index is not migrating"},
		{&migrate.TransitionError{From: migrate.ShadowWrite, To: migrate.Cutover, Reason: "too soon"},
			"shadow-write -> cutover refused: too soon (force overrides)"},
		// A migrate error wrapping a backend's, as migrate.OpenTable
		// wraps what CreateTable returns. Before, with the package names
		// and sentinel texts deleted from a fixed list, the client read
		// "legacy table old: pebble: checkpoint directory refused".
		{fmt.Errorf("migrate: legacy table %s: %w", "old", pebble.ErrCheckpointTarget),
			"legacy table old: checkpoint directory refused"},
		{fmt.Errorf("migrate: save %s: %w", "ev", fmt.Errorf("cql: %w", store.ErrUnavailable)), "save ev"},
		{fmt.Errorf("%w: timestamp 2001-01-01T00:00:00Z + retention 24h <= now", timeseries.ErrExpired),
			"already expired: timestamp 2001-01-01T00:00:00Z + retention 24h <= now"},
	} {
		if got := clientMessage(c.err); got != c.want {
			t.Errorf("clientMessage(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestPackageNamesComplete: every package of the module is in
// packageNames, so that no message reaches a client with a package
// name because the list fell behind.
func TestPackageNamesComplete(t *testing.T) {
	clause := regexp.MustCompile(`(?m)^package (\w+)$`)
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// internal/ holds helpers whose errors features wrap in their
			// own words; tools and bench are not part of the server.
			if name := d.Name(); name != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "internal" || name == "tools" || name == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := clause.FindSubmatch(src); m != nil && string(m[1]) != "main" {
			seen[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range seen {
		if !packageNames[name] && !strings.HasSuffix(name, "test") {
			t.Errorf("package %s is missing from packageNames", name)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d packages: %v", len(seen), seen)
	}
}

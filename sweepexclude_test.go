package ebb_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
)

// TestSweepExclude checks that Options.SweepExclude reaches the expiry
// decorator: items of an excluded table write no expiry-index entry (the
// meter counts none), while a table it does not name still gets them.
func TestSweepExclude(t *testing.T) {
	ctx := t.Context()
	excluded := map[string]bool{}
	db, err := ebb.Open(ctx, ebb.Options{Store: testbackend.Pebble(t, nil), NoBackground: true,
		SweepExclude: func(table string) bool { return excluded[table] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	indexWrites := func() int64 {
		t.Helper()
		u, err := db.Usage(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		return u.Total("dynamodb", "write", "expiry_index")
	}
	add := func(name string) {
		t.Helper()
		id := lists.FeatureID{EntityType: "user", Feature: name}
		f, _, err := db.Lists().CreateFeature(ctx, id, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "_excluded") {
			excluded[f.Table] = true
		}
		if _, err := db.Lists().Add(ctx, id, "u", []lists.Item{{Value: []byte("v"), Timestamp: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	before := indexWrites()
	add("seen_excluded")
	if n := indexWrites() - before; n != 0 {
		t.Fatalf("%d expiry-index write units for an excluded table, want none", n)
	}
	add("seen")
	if n := indexWrites() - before; n == 0 {
		t.Fatal("no expiry-index writes for a table not excluded")
	}
}

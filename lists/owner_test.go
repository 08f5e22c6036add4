package lists_test

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
)

// TestFeatureOfTable checks that a feature's table names its feature,
// and that other tables name none.
func TestFeatureOfTable(t *testing.T) {
	ctx := t.Context()
	svc, err := lists.New(ctx, testbackend.Pebble(t, nil), lists.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := lists.FeatureID{EntityType: "user", Feature: "seen", Version: "v2"}
	f, _, err := svc.CreateFeature(ctx, id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := svc.FeatureOfTable(ctx, f.Table)
	if err != nil || !ok || got != id {
		t.Fatalf("FeatureOfTable(%s) = %v, %v, %v; want %v", f.Table, got, ok, err, id)
	}
	for _, table := range []string{"ebb_items", "list_00000000000000000000000000000000"} {
		if got, ok, err := svc.FeatureOfTable(ctx, table); err != nil || ok {
			t.Fatalf("FeatureOfTable(%s) = %v, %v, %v; want none", table, got, ok, err)
		}
	}
}

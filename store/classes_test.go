package store

import (
	"errors"
	"testing"
	"time"
)

// TestClassRules checks DynamoDB's limit of two table-class changes in a
// 30-day trailing window: a third change waits until the oldest of two
// leaves the window, and a change exactly 30 days old no longer counts.
func TestClassRules(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r := DynamoDBClasses
	if !r.Supported() || (ClassRules{}).Supported() {
		t.Fatal("DynamoDB has classes, the zero rules none")
	}
	now := at("2026-03-31T00:00:00Z")
	two := []time.Time{at("2026-03-10T00:00:00Z"), at("2026-03-20T00:00:00Z")}
	if n, next := r.Next(two, now); n != 2 || !next.Equal(at("2026-04-09T00:00:00Z")) {
		t.Fatalf("two changes: %d, next %s; want 2, 2026-04-09", n, next)
	}
	if n, next := r.Next(two[1:], now); n != 1 || !next.Equal(now) {
		t.Fatalf("one change: %d, next %s; want 1, now", n, next)
	}
	// Exactly 30 days after the first change it has left the window.
	later := at("2026-04-09T00:00:00Z")
	if got := r.Recent(two, later); len(got) != 1 || !got[0].Equal(two[1]) {
		t.Fatalf("recent at %s = %v, want only the second change", later, got)
	}
	ms := []int64{two[0].UnixMilli(), two[1].UnixMilli()}
	if kept, ok := r.Allowed(ms, now); ok || len(kept) != 2 {
		t.Fatalf("allowed with two recent changes = %v, %v; want refused", kept, ok)
	}
	if kept, ok := r.Allowed(ms, later); !ok || len(kept) != 1 {
		t.Fatalf("allowed once the first left the window = %v, %v; want allowed, one kept", kept, ok)
	}
}

func TestParseTableClass(t *testing.T) {
	for _, s := range []string{"", "standard", "standard_ia"} {
		if c, err := ParseTableClass(s); err != nil || string(c) != s {
			t.Errorf("ParseTableClass(%q) = %q, %v", s, c, err)
		}
	}
	if _, err := ParseTableClass("STANDARD_INFREQUENT_ACCESS"); !errors.Is(err, ErrInvalid) {
		t.Errorf("the service's own name: %v, want ErrInvalid", err)
	}
	if TableClass("").Or() != ClassStandard || ClassInfrequentAccess.Or() != ClassInfrequentAccess {
		t.Error("Or")
	}
}

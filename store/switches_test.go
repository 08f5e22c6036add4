package store

import (
	"slices"
	"testing"
	"time"
)

func TestSwitchRulesAllowed(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	two := SwitchRules{MaxToOnDemand: 2, Window: 24 * time.Hour}
	recent, ok := two.Allowed([]int64{ms(25 * time.Hour), ms(23 * time.Hour), ms(time.Hour)}, now)
	if ok || len(recent) != 2 {
		t.Fatalf("two switches within the window, limit 2: ok=%v recent=%v", ok, recent)
	}
	k := KeyspacesSwitches
	if h, ok := k.Allowed(nil, now); !ok || len(h) != 0 {
		t.Fatalf("no history: %v %v", h, ok)
	}
	if h, ok := k.Allowed([]int64{ms(25 * time.Hour), ms(23 * time.Hour)}, now); ok || !slices.Equal(h, []int64{ms(23 * time.Hour)}) {
		t.Fatalf("a switch 23 h ago: history %v allowed %v; want [recent] false", h, ok)
	}
	if h, ok := k.Allowed([]int64{ms(25 * time.Hour), ms(24 * time.Hour)}, now); !ok || len(h) != 0 {
		t.Fatalf("switches at and past the window's edge are forgotten: history %v allowed %v", h, ok)
	}
	if _, ok := (SwitchRules{}).Allowed([]int64{ms(time.Minute), ms(time.Second)}, now); !ok {
		t.Fatal("the zero rules limit nothing")
	}
}

// TestSwitchRulesNext checks when the next switch to on-demand is allowed,
// by hand: DynamoDB's fifth switch waits for the oldest of the four to
// leave the window; a Keyspaces table created on-demand at 10:00 may go
// back to on-demand at 10:00 the next day, whatever it did meanwhile.
func TestSwitchRulesNext(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	now := at("2026-03-02T09:00:00Z")
	four := []time.Time{at("2026-03-01T10:00:00Z"), at("2026-03-01T11:00:00Z"), at("2026-03-01T12:00:00Z"), at("2026-03-02T08:00:00Z")}
	if n, next := DynamoDBSwitches.NextToOnDemand(four, now); n != 4 || !next.Equal(at("2026-03-02T10:00:00Z")) {
		t.Fatalf("DynamoDB after four switches: n=%d next=%s", n, next)
	}
	if n, next := DynamoDBSwitches.NextToOnDemand(four[1:], now); n != 3 || !next.Equal(now) {
		t.Fatalf("DynamoDB after three switches: n=%d next=%s; want allowed now", n, next)
	}
	created := []time.Time{at("2026-03-01T10:00:00Z")}
	if n, next := KeyspacesSwitches.NextToOnDemand(created, now); n != 1 || !next.Equal(at("2026-03-02T10:00:00Z")) {
		t.Fatalf("Keyspaces, created on-demand 23 h ago: n=%d next=%s", n, next)
	}
	if _, next := KeyspacesSwitches.NextToOnDemand(created, at("2026-03-02T10:00:00Z")); !next.Equal(at("2026-03-02T10:00:00Z")) {
		t.Fatalf("Keyspaces, created on-demand 24 h ago: next=%s; want allowed now", next)
	}
}

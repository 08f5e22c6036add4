package migrate

import (
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestCheckTransition runs the phase rules against a fake clock.
func TestCheckTransition(t *testing.T) {
	clock := storetest.NewClock(storetest.Epoch)
	began := clock.Now()
	facts := func() Facts {
		return Facts{Now: clock.Now(), Retention: 24 * time.Hour, DualWritesSince: began}
	}
	withCopy := func(f Facts, at time.Time) Facts { f.LastCopyStartedAt = at; return f }
	withFailure := func(f Facts, at time.Time) Facts { f.LastShadowWriteFailure = at; return f }
	clock.Advance(time.Hour)
	for _, tc := range []struct {
		name     string
		from, to Phase
		f        Facts
		force    bool
		ok       bool
	}{
		{"same phase", ShadowRead, ShadowRead, facts(), false, true},
		{"one step", ShadowWrite, ShadowRead, facts(), false, true},
		{"one step to merged", ShadowRead, MergedRead, facts(), false, true},
		{"skip a phase", ShadowWrite, MergedRead, facts(), false, false},
		{"skip a phase, forced", ShadowWrite, MergedRead, facts(), true, true},
		{"cutover with live legacy rows", MergedRead, Cutover, facts(), false, false},
		{"cutover forced", MergedRead, Cutover, facts(), true, true},
		{"cutover after a backfill begun after dual writes", MergedRead, Cutover, withCopy(facts(), began.Add(time.Minute)), false, true},
		{"cutover after a backfill begun before dual writes", MergedRead, Cutover, withCopy(facts(), began.Add(-time.Minute)), false, false},
		{"cutover after a backfill older than a shadow failure", MergedRead, Cutover,
			withFailure(withCopy(facts(), began.Add(time.Minute)), began.Add(2*time.Minute)), false, false},
		{"roll back one step", MergedRead, ShadowRead, facts(), false, true},
		{"roll back two steps", MergedRead, ShadowWrite, facts(), false, true},
		{"cutover back to merged", Cutover, MergedRead, facts(), false, true},
		{"cutover back to legacy reads", Cutover, ShadowRead, facts(), false, false},
		{"cutover back to legacy reads, forced", Cutover, ShadowWrite, facts(), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTransition(tc.from, tc.to, tc.f, tc.force)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckTransition(%s, %s, force %v) = %v, want ok %v", tc.from, tc.to, tc.force, err, tc.ok)
			}
			if err != nil && (!errors.Is(err, ErrPhaseRefused) || !errors.Is(err, store.ErrConflict)) {
				t.Fatalf("error %v is not ErrPhaseRefused and store.ErrConflict", err)
			}
		})
	}

	// Time alone covers the legacy table a retention after dual writes
	// began, and a retention after the last failed shadow write.
	f := facts()
	if ok, _ := f.LegacyCovered(); ok {
		t.Fatal("covered an hour in")
	}
	clock.Set(began.Add(24*time.Hour - time.Millisecond))
	if ok, _ := facts().LegacyCovered(); ok {
		t.Fatal("covered a millisecond before retention had passed")
	}
	clock.Set(began.Add(24 * time.Hour))
	if err := CheckTransition(MergedRead, Cutover, facts(), false); err != nil {
		t.Fatalf("cutover a retention after dual writes began: %v", err)
	}
	if ok, _ := withFailure(facts(), began.Add(time.Hour)).LegacyCovered(); ok {
		t.Fatal("covered though a shadow write failed less than a retention ago")
	}
	if _, err := ParsePhase("cut-over"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("ParsePhase of an unknown phase: %v", err)
	}
}

func TestThrottle(t *testing.T) {
	for _, tc := range []struct {
		rows, units, rps, ups float64
		elapsed               time.Duration
		want                  time.Duration
	}{
		{1000, 0, 0, 0, 0, 0},
		{1000, 0, 500, 0, 0, 2 * time.Second},
		{1000, 0, 500, 0, 1500 * time.Millisecond, 500 * time.Millisecond},
		{1000, 0, 500, 0, 3 * time.Second, 0},
		{100, 4000, 1000, 1000, time.Second, 3 * time.Second},
	} {
		if got := throttle(tc.rows, tc.units, tc.rps, tc.ups, tc.elapsed); got != tc.want {
			t.Errorf("throttle(%v rows, %v units, %v/s, %v/s, %s) = %s, want %s", tc.rows, tc.units, tc.rps, tc.ups, tc.elapsed, got, tc.want)
		}
	}
}

package switchlimit

import (
	"testing"
	"time"
)

func TestAllowed(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	recent, ok := Allowed([]int64{ms(25 * time.Hour), ms(23 * time.Hour), ms(time.Hour)}, now, 24*time.Hour, 2)
	if ok || len(recent) != 2 {
		t.Fatalf("two switches within the window, limit 2: ok=%v recent=%v", ok, recent)
	}
	recent, ok = Allowed([]int64{ms(25 * time.Hour), ms(24 * time.Hour)}, now, 24*time.Hour, 1)
	if !ok || len(recent) != 0 {
		t.Fatalf("switches at and past the window's edge are forgotten: ok=%v recent=%v", ok, recent)
	}
}

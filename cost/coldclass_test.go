package cost

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestColdClass works one example by hand: 1,000 rows/s of 200 bytes
// (300 stored on DynamoDB) kept 1008h, shards moved to Standard-IA 168h
// after their end, so each row spends 840h there: 1,000 * 300 B * 840h of
// storage, at 0.25 - 0.10 less per GB-month. Half of 100 reads/s of 100
// rows (5 read units each) go to cold shards, at 0.15625 - 0.125 more
// per million. Keyspaces has no class: no estimate.
func TestColdClass(t *testing.T) {
	w := Workload{RowsPerSecond: 1000, RowBytes: 200, Retention: Duration(1008 * time.Hour),
		ReadsPerSecond: 100, RowsPerRead: 100, ColdAfter: Duration(168 * time.Hour), ColdReadShare: 0.5}
	est, err := Run(w, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	coldGB := 1000 * 300 * (840 * 3600.0) / GB
	saved := coldGB * (0.25 - 0.10)
	extra := 100 * 0.5 * 5 * SecondsPerMonth * (0.15625 - 0.125) / 1e6
	for _, p := range est.Providers {
		c := p.ColdClass
		if p.Provider == Keyspaces {
			if c != nil {
				t.Fatalf("keyspaces has no table class, got %+v", c)
			}
			continue
		}
		if c == nil {
			t.Fatal("no Standard-IA estimate for dynamodb")
		}
		near := func(what string, got, want float64) {
			if math.Abs(got-want) > 1e-6*math.Max(1, want) {
				t.Errorf("%s = %v, want %v", what, got, want)
			}
		}
		near("cold GB", c.ColdGB, coldGB)
		near("storage saved", c.StorageSaved, saved)
		near("reads extra", c.ReadsExtra, extra)
		near("saved", c.Saved, saved-extra)
		near("with class", c.WithClass, c.Shards-(saved-extra))
		var shards float64
		for _, b := range p.Strategies {
			if b.Strategy == Shards {
				shards = b.Total
			}
		}
		near("shards total", c.Shards, shards)
	}
	// cold_after at or past the retention leaves nothing in the class.
	w.ColdAfter, w.ColdReadShare = Duration(2000*time.Hour), 0
	est, err = Run(w, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	if c := est.Providers[0].ColdClass; c == nil || c.ColdGB != 0 || c.Saved != 0 {
		t.Fatalf("cold_after past retention: %+v", c)
	}
	var in *InputError
	for _, bad := range []Workload{
		{RowsPerSecond: 1, RowBytes: 1, Retention: Duration(time.Hour), ColdReadShare: 0.5},
		{RowsPerSecond: 1, RowBytes: 1, Retention: Duration(time.Hour), ColdAfter: Duration(time.Hour), ColdReadShare: 2},
		{RowsPerSecond: 1, RowBytes: 1, Retention: Duration(time.Hour), ColdAfter: Duration(-time.Hour)},
	} {
		if _, err := Run(bad, DefaultPrices()); !errors.As(err, &in) {
			t.Errorf("%+v: %v, want an InputError", bad, err)
		}
	}
}

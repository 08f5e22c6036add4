package cost

import (
	"math"
	"testing"
	"time"

	"github.com/ebb-data/ebb/meter"
)

// TestModesWorkedExample checks the expiry-mode table of docs/cost.md's
// second worked example (10,000 items a second of 200 bytes, 720 h TTL
// carried by every item, 1,000 reads of 100 items a second, DynamoDB), whose
// figures were worked out by hand there, and the cheapest mode under three
// bounds.
func TestModesWorkedExample(t *testing.T) {
	w := Workload{
		RowsPerSecond: 10000, RowBytes: 200, Retention: Duration(720 * time.Hour),
		ReadsPerSecond: 1000, RowsPerRead: 100, OwnTTLShare: 1, OwnTTL: Duration(720 * time.Hour),
		Providers: []string{DynamoDB},
	}
	want := map[string]struct{ storage, expiry, total float64 }{
		ModeSweep:  {1810.49, 49435.40, 69313.39},
		ModeNative: {1931.19, 0, 19998.69},
		ModeDrop:   {2021.72, 0, 20089.22},
	}
	for _, c := range []struct {
		bound    time.Duration
		cheapest string
	}{{0, ModeNative}, {time.Minute, ModeSweep}, {72 * time.Hour, ModeNative}, {200 * time.Hour, ModeNative}, {time.Second, ""}} {
		w.GoneWithin = Duration(c.bound)
		est, err := Run(w, DefaultPrices())
		if err != nil {
			t.Fatal(err)
		}
		p := est.Providers[0]
		if len(p.Modes) != 3 {
			t.Fatalf("%d modes, want 3", len(p.Modes))
		}
		for _, b := range p.Modes {
			wnt := want[b.Strategy]
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"writes", b.Writes, 16425}, {"reads", b.Reads, 1642.5}, {"storage", b.Storage, wnt.storage}, {"expiry", b.Expiry, wnt.expiry}, {"total", b.Total, wnt.total}} {
				if math.Abs(f.got-f.want) > 0.005 {
					t.Errorf("%s %s = %.2f, want %.2f", b.Strategy, f.name, f.got, f.want)
				}
			}
		}
		if p.CheapestMode != c.cheapest {
			t.Errorf("gone within %s: cheapest %q, want %q", c.bound, p.CheapestMode, c.cheapest)
		}
	}
	// Promptness: seconds, the TTL lag, the shard period.
	est, _ := Run(w, DefaultPrices())
	for i, want := range []time.Duration{SweepLag, 48 * time.Hour, 168 * time.Hour} {
		if got := time.Duration(est.Providers[0].Modes[i].GoneWithin); got != want {
			t.Errorf("%s gone within %s, want %s", est.Providers[0].Modes[i].Strategy, got, want)
		}
	}
	w.GoneWithin = Duration(-time.Second)
	if _, err := Run(w, DefaultPrices()); err == nil {
		t.Error("a negative --gone-within is accepted")
	}
}

// TestCompareModesLive checks the live comparison on metered traffic: sweep
// is the traffic as metered, native trades the index and sweeper requests
// for TTL deletes and the lag's storage, drop keeps the traffic without
// them and holds the rows half a week more.
func TestCompareModesLive(t *testing.T) {
	since := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	units := func(w, r, ttl int64) map[string]map[string]int64 {
		return map[string]map[string]int64{
			DynamoDB:  {"write": w, "read": r, "native_ttl_delete": ttl},
			Keyspaces: {"write": w, "read": r, "native_ttl_delete": ttl},
		}
	}
	u := meter.Usage{Since: since, At: since.Add(time.Hour), Operations: []meter.OpUsage{
		{Class: meter.ClassListFeature.String(), Op: meter.OpUpsert.String(), Rows: 3600, Units: units(3600, 0, 3600)},
		{Class: meter.ClassExpiryIndex.String(), Op: meter.OpUpsert.String(), Rows: 3600, Units: units(3600, 0, 0)},
		{Class: meter.ClassListFeature.String(), Op: meter.OpSweepDelete.String(), Rows: 3600, Bytes: 0, Units: units(3600, 0, 0)},
	}}
	p := DefaultPrices()
	live, err := Project(u, p)
	if err != nil {
		t.Fatal(err)
	}
	live.CompareModes(u, p, time.Minute)
	for _, pr := range live.Projections {
		if len(pr.Modes) != 3 || pr.Modes[0].Total != pr.Total {
			t.Fatalf("%s: modes %+v, sweep is not the metered total %g", pr.Provider, pr.Modes, pr.Total)
		}
		// One row (1 KB) a second swept: held for the lag, or half a week.
		lag := 48 * time.Hour
		if pr.Provider == Keyspaces {
			lag = 240 * time.Hour
		}
		held := func(d time.Duration) float64 { return 1024 * d.Seconds() / GB * 0.25 }
		if got, want := pr.Modes[1].Total, pr.NativeTTL+held(lag); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s native = %g, want %g", pr.Provider, got, want)
		}
		if got, want := pr.Modes[2].Total, pr.Total-pr.Expiry+held(84*time.Hour); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s drop = %g, want %g", pr.Provider, got, want)
		}
		if pr.CheapestMode != ModeSweep {
			t.Errorf("%s: cheapest within 1m %q, want sweep, the only mode that prompt", pr.Provider, pr.CheapestMode)
		}
	}
}

package cost

import (
	"math"
	"time"

	"github.com/ebb-data/ebb/meter"
)

// Expiry modes of a list feature or shared table (store.ExpiryMode), in
// the order they are reported.
const (
	// ModeSweep: an index entry per row, deleted by ebb's sweeper within
	// seconds of its expiry.
	ModeSweep = "sweep"
	// ModeNative: the provider's TTL deletes the row, some days late.
	ModeNative = "native"
	// ModeDrop: the row is held until its whole table is dropped.
	ModeDrop = "drop"
)

// Modes lists every expiry mode in report order.
var Modes = []string{ModeSweep, ModeNative, ModeDrop}

// SweepLag is how long after its expiry the sweeper has deleted a row
// while it keeps up: a window (1 s), the grace for writes in flight (1 s)
// and a tick (1 s) with defaults, rounded up. It is the sweep mode's
// promptness; native TTL's is the workload's TTL lag, drop's the shard
// period.
const SweepLag = 5 * time.Second

// ModeBreakdown is one expiry mode's monthly cost for every row of the
// workload (each row expiring at its TTL: retention, or own TTL for the
// own-TTL share), with how long after its expiry a row may still be on
// disk. Its Strategy is the mode: sweep, native or drop.
type ModeBreakdown struct {
	Breakdown
	// GoneWithin is the promptness: the longest a row stays on disk past
	// its expiry (sweep: SweepLag; native: the TTL lag; drop: the shard
	// period, a table being dropped once its last row has expired).
	GoneWithin Duration `json:"gone_within"`
	// Meets says whether GoneWithin is within the workload's bound (true
	// when there is none).
	Meets bool `json:"meets"`
}

// mode prices one expiry mode. Rows are held until their expiry on
// average (retention, or own TTL for the own-TTL share), then for the
// mode's lag: nothing for the sweeper, the TTL lag for native, half a
// shard period for drop on average.
func (m model) mode(name string) ModeBreakdown {
	w := m.w
	r := w.RowsPerSecond
	own, rest := r*w.OwnTTLShare, r*(1-w.OwnTTLShare)
	ret := time.Duration(w.Retention).Seconds()
	ownTTL := time.Duration(w.OwnTTL).Seconds()
	period := time.Duration(w.ShardPeriod)
	b := ModeBreakdown{Breakdown: Breakdown{Strategy: name, Writes: m.writeCost(r * m.wu), Reads: m.readCost(w.ReadsPerSecond * m.ru)}}
	var extra float64
	switch name {
	case ModeSweep:
		b.Expiry = m.writeCost(r*m.sweepW) + m.readCost(r*m.sweepR)
		b.GoneWithin = Duration(SweepLag)
	case ModeNative:
		b.Expiry = m.ttlCost(r * m.ttl)
		extra = m.lag
		b.GoneWithin = Duration(time.Duration(m.lag * float64(time.Second)))
	case ModeDrop:
		extra = period.Seconds() / 2
		b.GoneWithin = Duration(period)
	}
	b.StoredGB = m.storedGB(rest, ret+extra) + m.storedGB(own, ownTTL+extra)
	b.Storage = b.StoredGB * m.pp.StorageGBMonth
	b.Total = b.Writes + b.Reads + b.Storage + b.Expiry
	b.Meets = w.GoneWithin == 0 || b.GoneWithin <= w.GoneWithin
	return b
}

// cheapest returns the mode of lowest total among those meeting the
// bound, or "" when none does.
func cheapest(modes []ModeBreakdown) string {
	best, total := "", math.Inf(1)
	for _, b := range modes {
		if b.Meets && b.Total < total {
			best, total = b.Strategy, b.Total
		}
	}
	return best
}

// ModeCost is one expiry mode's projected monthly cost for a running
// server's traffic (see Live.CompareModes).
type ModeCost struct {
	Mode  string  `json:"mode"`
	Total float64 `json:"total"`
	// GoneWithin is the mode's promptness, as in ModeBreakdown; Meets
	// compares it with the bound asked for.
	GoneWithin Duration `json:"gone_within"`
	Meets      bool     `json:"meets"`
}

// Live-projection assumptions for the modes that hold rows past their
// expiry: how long (the defaults of Workload).
const (
	liveDynamoDBLag  = 48 * time.Hour
	liveKeyspacesLag = 240 * time.Hour
	liveDropPeriod   = 7 * 24 * time.Hour
)

// CompareModes adds to each projection of l what the metered traffic
// would cost a month under each expiry mode, and the cheapest mode whose
// promptness is within goneWithin (zero: no bound). sweep is the traffic
// as metered; native drops the expiry index's and the sweeper's requests,
// adds a TTL delete for each row the sweeper deleted, and holds those rows
// for the provider's TTL lag (48 h on DynamoDB, 240 h on Keyspaces); drop
// drops the same requests, adds nothing, and holds the rows half a week
// longer on average (tables dropped weekly once their rows have expired).
// The rows' size is the metered size of the sweeper's deletes, or 1 KB a
// row where the meter has none.
func (l *Live) CompareModes(u meter.Usage, p Prices, goneWithin time.Duration) {
	if l.Seconds <= 0 {
		return
	}
	var sweptBytes float64
	for _, o := range u.Operations {
		if o.Op == meter.OpSweepDelete.String() {
			sweptBytes += float64(max(o.Bytes, o.Rows*1024))
		}
	}
	bytesPerSecond := sweptBytes / l.Seconds
	for i := range l.Projections {
		pr := &l.Projections[i]
		pp := p.provider(pr.Provider)
		lag := liveDynamoDBLag
		if pr.Provider == Keyspaces {
			lag = liveKeyspacesLag
		}
		held := func(d time.Duration) float64 { return bytesPerSecond * d.Seconds() / GB * pp.StorageGBMonth }
		base := pr.Total - pr.Expiry // the traffic without the index and the sweeper
		modes := []ModeCost{
			{Mode: ModeSweep, Total: pr.Total, GoneWithin: Duration(SweepLag)},
			{Mode: ModeNative, Total: pr.NativeTTL + held(lag), GoneWithin: Duration(lag)},
			{Mode: ModeDrop, Total: base + held(liveDropPeriod/2), GoneWithin: Duration(liveDropPeriod)},
		}
		best, total := "", math.Inf(1)
		for j := range modes {
			modes[j].Meets = goneWithin == 0 || time.Duration(modes[j].GoneWithin) <= goneWithin
			if modes[j].Meets && modes[j].Total < total {
				best, total = modes[j].Mode, modes[j].Total
			}
		}
		pr.Modes, pr.CheapestMode = modes, best
	}
}

package lists

import (
	"context"
	"math"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Stamp records what a page read depends on, so that a caller which keeps
// the page (the server keeps its encoded answer) can ask Fresh later
// whether the same read would hand out the same items and token. A page is
// the same while no write reaches the list's partition (or the feature
// version's table), the feature version reads the same, and the clock has
// not reached the first moment an item of the page expires or a row the
// read passed over leaves the store's range. Only a store every write of
// which passes through this process can tell the first (the embedded one,
// store.Generations); elsewhere Stamp.Kept is false and Fresh never holds.
type Stamp struct {
	kept    bool
	feature Feature
	gen     store.Generation
	// readAt and until bound the clock (Unix nanoseconds) over which the
	// page holds: [readAt, until).
	readAt, until int64
	items         int
	tally         store.ScanTally
}

// Kept reports whether the page can be kept: Fresh may hold for it.
func (st *Stamp) Kept() bool { return st.kept }

// generations finds the store's write generations under its decorators.
func (s *Service) generations() (store.Generations, bool) {
	return store.As[store.Generations](s.st)
}

// stampStart begins st for a read of the list of entityID in f: the
// generation is taken before the read, so that a write the read may see
// changes it.
func (s *Service) stampStart(st *Stamp, f Feature, entityID string, now int64) {
	*st = Stamp{}
	gens, ok := s.generations()
	if !ok {
		return
	}
	g, err := gens.Generation(f.Table, []any{entityID})
	if err != nil || !g.Settled() {
		return
	}
	*st = Stamp{kept: true, feature: f, gen: g, readAt: now, until: math.MaxInt64}
}

// stampRow narrows st's clock for a row the read examined: ts is its
// timestamp, expMs its store expiry (Unix milliseconds, 0 for none), live
// whether it was handed out. A live item leaves the page at its exact
// expiry; a row passed over leaves the store's range at its store expiry,
// letting the row after it into the page; and any row leaves the range the
// read starts at once it is MaxTTL old.
func (st *Stamp) stampRow(ts, expMs int64, live bool, maxTTL time.Duration) {
	if !st.kept {
		return
	}
	until := satAdd(ts, int64(maxTTL))
	switch {
	case live:
		until = min(until, exactExpiry(ts, expMs))
	case expMs != 0:
		until = min(until, storeExpiry(expMs))
	}
	st.until = min(st.until, until)
}

// storeExpiry is the instant (Unix nanoseconds) the store stops handing out
// a row whose expiry is expMs (Unix milliseconds, not 0).
func storeExpiry(expMs int64) int64 {
	if expMs > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return expMs * int64(time.Millisecond)
}

// Fresh reports whether the read st was stamped by (of the list of
// entityID in the feature version id) would hand out the same page now.
// When it does, the read is accounted as the store read it stands for
// (the items-read metric, and the metering decorator's read units), so a
// kept page costs what it would on a backend without one.
func (s *Service) Fresh(ctx context.Context, id FeatureID, entityID string, st *Stamp) bool {
	if !st.kept {
		return false
	}
	if now := s.now().UnixNano(); now < st.readAt || now >= st.until {
		return false
	}
	f, err := s.lookup(ctx, id)
	if err != nil || !sameFeature(f, st.feature) {
		return false
	}
	gens, ok := s.generations()
	if !ok {
		return false
	}
	if g, err := gens.Generation(f.Table, []any{entityID}); err != nil || g != st.gen {
		return false
	}
	s.m.read.Add(float64(st.items))
	if c, ok := store.As[store.ScanCharger](s.st); ok {
		c.ChargeScan(ctx, f.Table, []any{entityID}, st.tally)
	}
	return true
}

// sameFeature reports whether a and b read alike.
func sameFeature(a, b Feature) bool {
	return a.FeatureID == b.FeatureID && a.Table == b.Table && a.TTL == b.TTL && a.MaxTTL == b.MaxTTL &&
		a.Expiry == b.Expiry && a.MaxItems == b.MaxItems && a.Created.Equal(b.Created)
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

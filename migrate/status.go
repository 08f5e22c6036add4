package migrate

import (
	"context"
	"sync"
	"time"
)

// counters are one index's shadow counters in this process.
type counters struct {
	mu            sync.Mutex
	writeFailures int64
	lastWriteFail time.Time
	readFailures  int64
	reads         int64
	mismatches    map[string]int64
	sample        []Mismatch // the latest, oldest first
	sampleAccrued float64    // sampling accumulator, in percent
}

func (s *Service) counter(index string) *counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counters[index]
	if c == nil {
		c = &counters{mismatches: map[string]int64{}}
		s.counters[index] = c
	}
	return c
}

func (c *counters) writeFailed(now time.Time) {
	c.mu.Lock()
	c.writeFailures++
	c.lastWriteFail = now
	c.mu.Unlock()
}

func (c *counters) lastWriteFailure() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastWriteFail
}

func (c *counters) readFailed() {
	c.mu.Lock()
	c.readFailures++
	c.mu.Unlock()
}

// sampled reports whether this query is in the sample: exactly percent of
// queries, spread evenly (an accumulator rather than chance, so that a
// rate is what it says over any run of queries).
func (c *counters) sampled(percent float64) bool {
	if percent <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sampleAccrued += percent
	if c.sampleAccrued >= 100 {
		c.sampleAccrued -= 100
		return true
	}
	return false
}

func (c *counters) compared(found []Mismatch, keep int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	for _, m := range found {
		c.mismatches[m.Kind]++
	}
	c.sample = append(c.sample, found...)
	if len(c.sample) > keep {
		c.sample = append([]Mismatch(nil), c.sample[len(c.sample)-keep:]...)
	}
}

// Counters are an index's shadow counters, as this process counted them
// since it started (the Prometheus series add up across replicas).
type Counters struct {
	ShadowWriteFailures int64 `json:"shadow_write_failures"`
	ShadowReadFailures  int64 `json:"shadow_read_failures"`
	ReadsCompared       int64 `json:"reads_compared"`
	// Mismatches by kind: Missing, Extra, Different.
	Mismatches map[string]int64 `json:"mismatches"`
	// MismatchSample holds the latest mismatching keys, oldest first,
	// bounded by Options.MismatchSample.
	MismatchSample []Mismatch `json:"mismatch_sample"`
}

func (c *counters) snapshot() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counters{
		ShadowWriteFailures: c.writeFailures, ShadowReadFailures: c.readFailures, ReadsCompared: c.reads,
		Mismatches:     map[string]int64{Missing: c.mismatches[Missing], Extra: c.mismatches[Extra], Different: c.mismatches[Different]},
		MismatchSample: append([]Mismatch{}, c.sample...),
	}
	return out
}

// Status is an index's migration as reported: its state, counters,
// backfill and what stands between it and cutover.
type Status struct {
	State
	Counters Counters `json:"counters"`
	// Backfill is the last backfill's checkpoint; nil when none ran.
	Backfill *Checkpoint `json:"backfill,omitempty"`
	// BackfillRunning: a backfill runs in this process.
	BackfillRunning bool `json:"backfill_running"`
	// CutoverReady: the rules allow cutover now without force;
	// CutoverBlockedBy says why not.
	CutoverReady     bool   `json:"cutover_ready"`
	CutoverBlockedBy string `json:"cutover_blocked_by,omitempty"`
	// LegacyLiveRows estimates the legacy rows still live, from the last
	// backfill's scan and the rows' TTLs; nil when no backfill scanned.
	LegacyLiveRows *int64 `json:"legacy_live_rows,omitempty"`
	// LegacyNewestExpiry is when the newest legacy row expires, as far as
	// ebb knows: the newest TTL the last scan saw, or the newest ebb
	// wrote (cutover + TTL). Zero when unknown.
	LegacyNewestExpiry time.Time `json:"legacy_newest_expiry,omitzero"`
	// LegacyDeletable: in cutover, and LegacyNewestExpiry has passed:
	// the legacy table's owner may delete it (ebb never does).
	LegacyDeletable bool `json:"legacy_deletable"`
}

// Status reports index's migration.
func (s *Service) Status(ctx context.Context, index string) (Status, error) {
	cfg, err := s.idx.IndexConfig(ctx, index)
	if err != nil {
		return Status{}, err
	}
	st, _, err := s.load(ctx, index)
	if err != nil {
		return Status{}, err
	}
	if st == nil {
		return Status{}, notMigrating(index)
	}
	out := Status{State: *st, Counters: s.counter(index).snapshot()}
	cp, _, err := s.loadCheckpoint(ctx, index)
	if err != nil {
		return Status{}, err
	}
	out.Backfill = cp
	s.mu.Lock()
	_, out.BackfillRunning = s.runs[index]
	s.mu.Unlock()
	f, err := s.facts(ctx, cfg, *st)
	if err != nil {
		return Status{}, err
	}
	now := f.Now
	if st.Phase == Cutover {
		out.CutoverReady = true
	} else if ok, why := f.LegacyCovered(); ok {
		out.CutoverReady = true
	} else {
		out.CutoverBlockedBy = why
	}
	// Rows ebb wrote to the legacy table expire by cutover + TTL at the
	// latest; rows already there by the newest TTL a scan saw.
	var newest time.Time
	if cp != nil && cp.Census != nil {
		newest = cp.Census.NewestExpiry
		live := cp.Census.liveAt(now)
		out.LegacyLiveRows = &live
		s.metrics.legacyLive.WithLabelValues(index).Set(float64(live))
	}
	if st.WriteLegacy && !st.CutoverAt.IsZero() {
		if t := st.CutoverAt.Add(legacyTTL(st, cfg)); t.After(newest) {
			newest = t
		}
	}
	out.LegacyNewestExpiry = newest
	out.LegacyDeletable = st.Phase == Cutover && !newest.IsZero() && !now.Before(newest)
	return out, nil
}

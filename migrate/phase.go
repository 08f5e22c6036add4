package migrate

import (
	"fmt"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/store"
)

// Phase is where an index stands in its migration from a legacy table.
type Phase string

// Phases, in rollout order.
const (
	// ShadowWrite: reads are answered from the legacy table; writes go to
	// the legacy table (when Settings.WriteLegacy) and also to the shards.
	// A write fails only if the legacy write fails; a failed shard write
	// is counted as a shadow failure.
	ShadowWrite Phase = "shadow-write"
	// ShadowRead: as ShadowWrite, and a sampled fraction of reads is also
	// read from the shards and compared, mismatches counted by kind.
	ShadowRead Phase = "shadow-read"
	// MergedRead: reads are answered from both, merged in order and
	// deduplicated; writes go to both, and fail if either fails.
	MergedRead Phase = "merged-read"
	// Cutover: the shards alone serve; the legacy table is no longer read
	// or written, and may be deleted by its owner once its newest row has
	// expired (Status.LegacyDeletableAt).
	Cutover Phase = "cutover"
)

// Phases lists every phase in rollout order.
var Phases = []Phase{ShadowWrite, ShadowRead, MergedRead, Cutover}

func (p Phase) rank() int {
	for i, q := range Phases {
		if p == q {
			return i
		}
	}
	return -1
}

// ParsePhase parses a phase name; unknown names wrap store.ErrInvalid.
func ParsePhase(s string) (Phase, error) {
	if p := Phase(s); p.rank() >= 0 {
		return p, nil
	}
	return "", store.Errorf(store.ErrInvalid, "unknown phase %q (want shadow-write, shadow-read, merged-read or cutover)", s)
}

// ErrPhaseRefused is a phase change the rules refuse; TransitionError
// says why and whether forcing it is allowed. It also matches
// store.ErrConflict (HTTP 409).
var ErrPhaseRefused = store.Mark(store.ErrConflict, "migrate", "phase change refused")

// TransitionError is a refused phase change.
type TransitionError struct {
	From, To Phase
	Reason   string
}

func (e *TransitionError) Error() string { return "migrate: " + e.ClientMessage() }

// ClientMessage says which change was refused and why.
func (e *TransitionError) ClientMessage() string {
	return fmt.Sprintf("%s -> %s refused: %s (force overrides)", e.From, e.To, e.Reason)
}

// Unwrap makes a TransitionError match ErrPhaseRefused, and so
// store.ErrConflict.
func (e *TransitionError) Unwrap() error { return ErrPhaseRefused }

// Facts are what the phase rules look at: pure inputs, so that the rules
// are tested with any clock.
type Facts struct {
	Now time.Time
	// Retention is the index's retention: the window reads cover.
	Retention time.Duration
	// DualWritesSince is when the migration began, and with it ebb's
	// writes to the shards: every event written through ebb since is in
	// the shards (or counted as a shadow failure).
	DualWritesSince time.Time
	// LastCopy is the start of the last backfill pass that copied (not a
	// dry run) and completed; zero when none did.
	LastCopyStartedAt time.Time
	// LastShadowWriteFailure is when a shadow write last failed (this
	// process's knowledge); zero when none did. The events of a failed
	// shadow write may be in the legacy table only.
	LastShadowWriteFailure time.Time
}

// LegacyCoveredAt returns when the shards hold every event of the
// retention window that the legacy table holds, going by time alone: once
// every event written before dual writes began, or by a failed shadow
// write, is past retention.
func (f Facts) LegacyCoveredAt() time.Time {
	t := f.DualWritesSince
	if f.LastShadowWriteFailure.After(t) {
		t = f.LastShadowWriteFailure
	}
	return t.Add(f.Retention)
}

// LegacyCovered reports whether the shards hold every live event the
// legacy table holds, and if not, why not. They do once time has taken
// every event the shards may lack out of the retention window, or once a
// backfill begun after dual writes began (and after the last failed
// shadow write) has completed.
func (f Facts) LegacyCovered() (bool, string) {
	if !f.Now.Before(f.LegacyCoveredAt()) {
		return true, "every event the shards may lack is past retention"
	}
	if c := f.LastCopyStartedAt; !c.IsZero() && !c.Before(f.DualWritesSince) && !c.Before(f.LastShadowWriteFailure) {
		return true, "a backfill begun after dual writes began has completed"
	}
	why := fmt.Sprintf("dual writes began %s", f.DualWritesSince.UTC().Format(time.RFC3339))
	if f.LastShadowWriteFailure.After(f.DualWritesSince) {
		why = fmt.Sprintf("a shadow write failed at %s", f.LastShadowWriteFailure.UTC().Format(time.RFC3339))
	}
	return false, fmt.Sprintf("the legacy table may hold live events the shards lack until %s (%s; retention %s): run a backfill to cut over sooner",
		f.LegacyCoveredAt().UTC().Format(time.RFC3339), why, durfmt.Format(f.Retention))
}

// CheckTransition applies the phase rules to a change from -> to:
//   - one step forward is allowed, except into cutover while the legacy
//     table may still hold live events the shards lack (see
//     Facts.LegacyCovered);
//   - skipping a phase forward is refused: each phase checks what the
//     next relies on;
//   - going back is allowed (a rollback), except from cutover to a phase
//     that reads the legacy table alone: writes since cutover are not in
//     it;
//   - force allows anything.
//
// Staying in the same phase is always allowed.
func CheckTransition(from, to Phase, f Facts, force bool) error {
	if from.rank() < 0 || to.rank() < 0 {
		return store.Errorf(store.ErrInvalid, "unknown phase in %q -> %q", from, to)
	}
	if from == to || force {
		return nil
	}
	refuse := func(why string) error { return &TransitionError{From: from, To: to, Reason: why} }
	switch d := to.rank() - from.rank(); {
	case d > 1:
		return refuse(fmt.Sprintf("it skips %s; go one phase at a time", Phases[from.rank()+1]))
	case d == 1 && to == Cutover:
		if ok, why := f.LegacyCovered(); !ok {
			return refuse(why)
		}
	case d < 0 && from == Cutover && to != MergedRead:
		return refuse("events written since cutover are not in the legacy table, which " + string(to) + " reads alone; go back to merged-read")
	}
	return nil
}

package store

import "fmt"

// ExpiryMode says how a row past its expiry is physically removed. Reads
// hide an expired row in every mode, to the millisecond; the modes differ
// only in what removes it from disk, how soon, and at what cost.
//
// The zero mode, ExpiryDefault, means "not chosen": a Mutation carrying it
// is swept, as every write was before modes existed, and a list feature or
// logical table created with it gets DefaultExpiryMode of its backend.
type ExpiryMode uint8

// Expiry modes.
const (
	// ExpiryDefault: not chosen (see ExpiryMode).
	ExpiryDefault ExpiryMode = iota
	// ExpirySweep: the expiry decorator writes an index entry for the row
	// and its sweeper deletes the row within seconds of its expiry. The
	// remote backends also write their native TTL as a backstop.
	ExpirySweep
	// ExpiryNative: no index entry; the backend's own TTL removes the row
	// (DynamoDB TTL within days, CQL at compaction). Only on a backend
	// whose Capabilities report NativeTTL.
	ExpiryNative
	// ExpiryDrop: no index entry and no native TTL; the row stays on disk
	// until its table is dropped (a list version, an index shard) or, for
	// a logical table of package multitable, deleted.
	ExpiryDrop
)

// Swept reports whether a write in mode m gets an expiry-index entry and
// so a sweeper delete: ExpiryDefault and ExpirySweep.
func (m ExpiryMode) Swept() bool { return m <= ExpirySweep }

// ErrNativeTTLUnsupported is returned for ExpiryNative on a backend
// without native TTL (the embedded one, or DynamoDB opened with native
// TTL off). It wraps ErrInvalid: nothing was created or changed.
var ErrNativeTTLUnsupported = Mark(ErrInvalid, "store", "expiry mode native needs a backend with native TTL")

// String returns the mode's name as the HTTP API and the CLI spell it.
func (m ExpiryMode) String() string {
	switch m {
	case ExpiryDefault:
		return ""
	case ExpirySweep:
		return "sweep"
	case ExpiryNative:
		return "native"
	case ExpiryDrop:
		return "drop"
	}
	return fmt.Sprintf("expiry_mode(%d)", uint8(m))
}

// ParseExpiryMode parses "sweep", "native" or "drop", and "" as
// ExpiryDefault. Any other string is an error wrapping ErrInvalid.
func ParseExpiryMode(s string) (ExpiryMode, error) {
	for _, m := range []ExpiryMode{ExpiryDefault, ExpirySweep, ExpiryNative, ExpiryDrop} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, Errorf(ErrInvalid, "expiry mode %q: want sweep, native or drop", s)
}

// DefaultExpiryMode is the mode a list feature or logical table gets when
// its creator names none: native on CQL, where a delete only adds a
// tombstone that compaction must later remove with the data it shadows,
// while the TTL ebb writes anyway removes the data at compaction for free;
// sweep elsewhere (the embedded backend has no native TTL, and on DynamoDB
// a sweep delete costs one write unit but frees storage within seconds
// instead of days; docs/cost.md compares them).
func DefaultExpiryMode(c Capabilities) ExpiryMode {
	if c.Backend == "cql" && c.NativeTTL {
		return ExpiryNative
	}
	return ExpirySweep
}

// CheckExpiryMode reports whether a backend with capabilities c can honour
// m: nil, or an error wrapping ErrNativeTTLUnsupported (and ErrInvalid).
func CheckExpiryMode(c Capabilities, m ExpiryMode) error {
	switch m {
	case ExpiryDefault, ExpirySweep, ExpiryDrop:
		return nil
	case ExpiryNative:
		if c.NativeTTL {
			return nil
		}
		return Errorf(ErrNativeTTLUnsupported, "backend %s has none", c.Backend)
	}
	return Errorf(ErrInvalid, "unknown expiry mode %d", uint8(m))
}

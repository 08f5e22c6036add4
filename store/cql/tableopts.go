package cql

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Role is what a table holds, as far as freeing its disk is concerned.
// Each role gets the table options (compaction, gc_grace_seconds) that let
// Cassandra and ScyllaDB remove its dead data soonest without the risks of
// a short grace period that the role cannot afford; docs/backends.md
// gives the measured effect. Options.TableOptions overrides them per role.
type Role string

// Table roles.
const (
	// RoleShard: a time shard of an index. No row expires or is deleted
	// (store.TableSpec.NeverExpires); the table is dropped whole.
	RoleShard Role = "shard"
	// RoleList: a list feature version. Every row carries the version's
	// TTL (store.TableSpec.DefaultTTL); items may also be removed.
	RoleList Role = "list"
	// RoleExpiry: the expiry index of package expiry, whose entries are
	// written with a row and deleted by the sweeper once it swept it.
	RoleExpiry Role = "expiry"
	// RoleShared: every other table, shared tables (package multitable)
	// and ebb's metadata among them: rows of any TTL, or none, and
	// deletes of live rows.
	RoleShared Role = "shared"
)

// Roles lists the roles, in the order the documentation gives them.
func Roles() []Role { return []Role{RoleShard, RoleList, RoleShared, RoleExpiry} }

// expiryIndexTable is the name of package expiry's index table
// (expiry.IndexTable; this package cannot import expiry, and a test checks
// that the two agree).
const expiryIndexTable = "ebb_expiry"

// RoleOf returns the role of a table from its spec: a never-expiring
// table is a shard, the expiry index is known by name, a table with a
// default TTL is a list version (the only tables ebb gives one), and every
// other table is shared.
func RoleOf(spec store.TableSpec) Role {
	switch {
	case spec.NeverExpires:
		return RoleShard
	case spec.Name == expiryIndexTable:
		return RoleExpiry
	case spec.DefaultTTL > 0:
		return RoleList
	}
	return RoleShared
}

// maxHintWindow is Cassandra's default max_hint_window (3 hours): a
// replica down for less gets the writes it missed, tombstones included,
// from hints. A hint lives no longer than the smallest gc_grace_seconds
// of its tables, so a grace period this long keeps hints whole.
const maxHintWindow = 3 * time.Hour

// twcsWindows is about how many TimeWindowCompactionStrategy windows a
// list version's TTL spans: few enough sstables to read, small enough
// windows that each expires soon after its last row.
const twcsWindows = 20

// roleOptions returns the WITH options ebb gives a table of the role on
// Cassandra and ScyllaDB; none on Keyspaces, which ignores compaction and
// grace settings (it removes expired and deleted data itself). ttl is the
// longest native TTL the table's rows carry (a list version's TTL plus the
// margin), zero when unknown.
//
// Why these:
//
//   - shard: nothing. No cell expires or is deleted, so no compaction
//     setting or grace period frees anything: the data leaves at DROP
//     TABLE (and, with auto_snapshot on, only when the snapshot is
//     cleared).
//   - list: TimeWindowCompactionStrategy, since rows share one TTL and
//     arrive in time order, so a whole sstable expires at once and is
//     deleted as a file, without being read; and gc_grace_seconds of the
//     TTL, capped at the hint window. A tombstone (an item removed) can
//     only shadow cells written before it, which expire within the TTL of
//     it: once the TTL has passed, purging it resurrects nothing whatever
//     repair did. With a TTL longer than three hours, a replica that missed
//     a removal gets it from hints if it was down less than the hint
//     window, and needs a repair otherwise, as Cassandra requires of any
//     node down that long; the worst case is a removed item seen again
//     until its own expiry.
//   - expiry: gc_grace_seconds 0 and single-sstable tombstone compactions.
//     An entry is a reminder to the sweeper, and every swept row carries a
//     native TTL as a backstop: an entry resurrected costs one sweep that
//     finds nothing to delete, an entry missing on one replica is still
//     read at LOCAL_QUORUM, and a row whose entry is lost entirely leaves
//     at its TTL. The sweeper's deletes then free their entries at the
//     next compaction instead of ten days later.
//   - shared: Cassandra's grace period (ten days), since a shared table's
//     deletes remove live rows of any lifetime, which only a repaired
//     tombstone keeps from coming back; tombstone compactions of single
//     sstables are allowed so that an sstable of expired rows is rewritten
//     without waiting for similar-sized ones.
//
// On ScyllaDB, tombstone_gc is set to timeout mode where the grace period
// is shortened, so that it applies even in a keyspace whose default is
// repair mode (purge only after a repair).
func roleOptions(p Provider, role Role, ttl time.Duration) []string {
	if p == Keyspaces {
		return nil
	}
	var opts []string
	switch role {
	case RoleList:
		unit, size := twcsWindow(ttl)
		opts = append(opts,
			fmt.Sprintf("compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': '%s', 'compaction_window_size': '%d', 'expired_sstable_check_frequency_seconds': '60', 'unchecked_tombstone_compaction': 'true'}", unit, size),
			fmt.Sprintf("gc_grace_seconds = %d", graceFor(ttl)))
	case RoleExpiry:
		opts = append(opts,
			"compaction = {'class': 'SizeTieredCompactionStrategy', 'unchecked_tombstone_compaction': 'true', 'tombstone_compaction_interval': '3600'}",
			"gc_grace_seconds = 0")
	case RoleShared:
		opts = append(opts, "compaction = {'class': 'SizeTieredCompactionStrategy', 'unchecked_tombstone_compaction': 'true'}")
	}
	if p == ScyllaDB && (role == RoleList || role == RoleExpiry) {
		opts = append(opts, "tombstone_gc = {'mode': 'timeout'}")
	}
	return opts
}

// graceFor is a list version's gc_grace_seconds: its TTL (at least one
// second), capped at the hint window.
func graceFor(ttl time.Duration) int64 {
	return max(1, ceilDiv(min(ttl, maxHintWindow).Milliseconds(), 1000))
}

// twcsWindow is the TimeWindowCompactionStrategy window of a TTL: about a
// twcsWindows-th of it, in whole minutes, hours or days (at least a
// minute).
func twcsWindow(ttl time.Duration) (unit string, size int64) {
	w := max(ttl/twcsWindows, time.Minute)
	switch {
	case w < time.Hour:
		return "MINUTES", ceilDiv(int64(w), int64(time.Minute))
	case w < 24*time.Hour:
		return "HOURS", ceilDiv(int64(w), int64(time.Hour))
	}
	return "DAYS", ceilDiv(int64(w), int64(24*time.Hour))
}

// tableOptionsFor returns the role options of a table on Cassandra and
// ScyllaDB: the operator's override for its role when there is one (empty:
// none at all), ebb's otherwise.
func tableOptionsFor(p Provider, spec store.TableSpec, margin time.Duration, overrides map[Role]string) []string {
	if p == Keyspaces {
		// Keyspaces ignores these settings at best; ebb sends it only
		// what it documents.
		return nil
	}
	role := RoleOf(spec)
	if o, ok := overrides[role]; ok {
		if o == "" {
			return nil
		}
		return []string{o}
	}
	var ttl time.Duration
	if spec.DefaultTTL > 0 {
		ttl = spec.DefaultTTL + margin
	}
	return roleOptions(p, role, ttl)
}

// ParseTableOptions parses operator overrides, each "ROLE=OPTIONS" where
// OPTIONS is what follows WITH in a CREATE TABLE, joined by AND (for
// example "list=gc_grace_seconds = 600 AND compaction = {...}"), or
// "ROLE=" for no options at all. Errors wrap store.ErrInvalid.
func ParseTableOptions(specs []string) (map[Role]string, error) {
	out := make(map[Role]string, len(specs))
	for _, s := range specs {
		role, opts, ok := strings.Cut(s, "=")
		if !ok {
			return nil, store.Errorf(store.ErrInvalid, "cql: table options %q: want ROLE=OPTIONS", s)
		}
		out[Role(strings.TrimSpace(role))] = strings.TrimSpace(opts)
	}
	if err := validateTableOptions(out); err != nil {
		return nil, err
	}
	return out, nil
}

// validateTableOptions checks overrides: known roles, and options that
// cannot end the statement they are part of.
func validateTableOptions(m map[Role]string) error {
	for role, opts := range m {
		if !slices.Contains(Roles(), role) {
			return store.Errorf(store.ErrInvalid, "cql: table options: unknown role %q (want shard, list, shared or expiry)", role)
		}
		if strings.Contains(opts, ";") {
			return store.Errorf(store.ErrInvalid, "cql: table options of role %s: a semicolon is not allowed", role)
		}
	}
	return nil
}

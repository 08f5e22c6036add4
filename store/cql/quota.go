package cql

import (
	"context"

	"github.com/ebb-data/ebb/store"
)

// DefaultKeyspacesMaxTables is Amazon Keyspaces' default quota of tables
// per account and Region (adjustable through Service Quotas; Amazon
// Keyspaces Developer Guide, "Quotas for Amazon Keyspaces").
const DefaultKeyspacesMaxTables = 256

// ErrTableQuota is returned by CreateTable when the new table (with its
// index companion) would take the keyspace past Options.MaxTables. It is a
// provider limit like a capacity switch's, so it matches
// store.ErrCapacityLimit too; nothing was created.
var ErrTableQuota = store.Mark(store.ErrCapacityLimit, "cql", "table quota reached")

// maxTables is the table quota the Store enforces: Options.MaxTables, or
// the provider's default when it is zero; 0 means none.
func maxTables(o Options, p Provider) int {
	switch {
	case o.MaxTables < 0:
		return 0
	case o.MaxTables > 0:
		return o.MaxTables
	case p == Keyspaces:
		return DefaultKeyspacesMaxTables
	}
	return 0
}

// tablesNeeded is how many CQL tables spec takes: its own and, with
// indexes, its companion.
func tablesNeeded(spec store.TableSpec) int {
	if len(spec.Indexes) > 0 {
		return 2
	}
	return 1
}

// checkTableQuota refuses spec when creating it would take the keyspace,
// which holds the tables of existing (by CQL name, the catalog and
// companions included), past limit. Creating a table that exists already
// takes nothing more.
func checkTableQuota(existing map[string]store.TableState, spec store.TableSpec, limit int) error {
	if limit <= 0 {
		return nil
	}
	if _, ok := existing[spec.Name]; ok {
		return nil
	}
	if need := tablesNeeded(spec); len(existing)+need > limit {
		return store.Errorf(ErrTableQuota, "%s needs %d CQL table(s); the keyspace holds %d of at most %d (--cql-max-tables)",
			spec.Name, need, len(existing), limit)
	}
	return nil
}

// reserveTables checks the quota against the keyspace's tables now. Two
// processes creating tables at once may both pass it; the provider's own
// quota still refuses the one too many.
func (s *Store) reserveTables(ctx context.Context, spec store.TableSpec) error {
	limit := maxTables(s.opts, s.provider)
	if limit <= 0 {
		return nil
	}
	existing, err := s.tableStates(ctx)
	if err != nil {
		return err
	}
	return checkTableQuota(existing, spec, limit)
}

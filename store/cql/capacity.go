package cql

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// Keyspaces lets a table switch between on-demand and provisioned capacity
// once in 24 hours; a second switch within the window is refused. ebb
// checks its own record of switches first, so the limit surfaces as
// store.ErrCapacityLimit before anything is sent. Cassandra and ScyllaDB
// have no capacity modes: there SetCapacity only records the setting, so
// Tables reports what the shard manager asked for. The history the limit
// is checked against holds the Unix ms times of earlier mode switches.
var switchLimit = remote.SwitchLimit{Max: 1, Window: 24 * time.Hour}

// capacityCQL is the Keyspaces statement that sets a table's capacity.
func capacityCQL(ks, table string, c store.Capacity) string {
	mode := "{'throughput_mode': 'PAY_PER_REQUEST'}"
	if c.Mode == store.Provisioned {
		mode = fmt.Sprintf("{'throughput_mode': 'PROVISIONED', 'read_capacity_units': %d, 'write_capacity_units': %d}", c.ReadUnits, c.WriteUnits)
	}
	return fmt.Sprintf("ALTER TABLE %s.%s WITH CUSTOM_PROPERTIES = {'capacity_mode': %s}", quote(ks), quote(table), mode)
}

// SetCapacity sets a Keyspaces table's capacity mode with ALTER TABLE …
// CUSTOM_PROPERTIES (its companion index table follows it) and records the
// setting in the catalog; elsewhere it records it only; see store.Store.
// Warm throughput does not exist on CQL providers and is recorded only.
func (s *Store) SetCapacity(ctx context.Context, name string, c store.Capacity) (err error) {
	ctx, cancel, err := s.core.BeginCapacity(ctx, c)
	if err != nil {
		return err
	}
	defer cancel()
	defer s.observe("set_capacity", timeNow(), &err)
	sc, err := s.lookup(ctx, name)
	if err != nil {
		return err
	}
	e, err := s.readEntry(ctx, name)
	if err != nil {
		return err
	}
	if exists, err := s.physicalExists(ctx, name); err != nil {
		return err
	} else if !exists {
		s.tables.Forget(name)
		return store.Errorf(store.ErrTableNotFound, "%q", name)
	}
	now := s.now()
	history, allowed := switchLimit.Allowed(e.switches, now)
	switching := s.provider == Keyspaces && e.capacity.Mode != c.Mode
	if switching && !allowed {
		return store.Errorf(store.ErrCapacityLimit, "%s switched capacity mode %d time(s) in the last 24 h; Keyspaces allows %d", name, len(history), switchLimit.Max)
	}
	if s.provider == Keyspaces {
		tables := []string{name}
		if sc.index != "" {
			tables = append(tables, indexTableName(name))
		}
		for _, t := range tables {
			if err := s.ddl(ctx, capacityCQL(s.ks, t, c)); err != nil {
				return s.tableErr(ctx, sc, "set capacity of", err)
			}
		}
		if err := s.waitTables(ctx, tables, false); err != nil {
			return err
		}
	}
	if switching {
		history = append(history, now.UnixMilli())
	}
	capDoc, _ := json.Marshal(c)
	histDoc, _ := json.Marshal(history)
	applied, err := s.session.Query(`UPDATE `+s.catalog()+` SET "capacity" = ?, "switches" = ? WHERE "name" = ? IF EXISTS`,
		string(capDoc), string(histDoc), name).MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return mapErr(ctx, "record capacity of "+name, err)
	}
	if !applied {
		s.tables.Forget(name)
		return store.Errorf(store.ErrTableNotFound, "%q dropped meanwhile", name)
	}
	return nil
}

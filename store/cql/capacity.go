package cql

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
)

// capacityCQL is the Keyspaces statement that sets a table's capacity
// from cur to c: its capacity mode when the mode or the provisioned units
// change, and its warm throughput (pre-warming, Amazon Keyspaces Developer
// Guide, "Configure pre-warming for tables") when c asks for some; "" when
// nothing changes. Both are CUSTOM_PROPERTIES of ALTER TABLE.
func capacityCQL(ks, table string, cur, c store.Capacity) string {
	var props []string
	if cur.Mode != c.Mode || (c.Mode == store.Provisioned && (cur.ReadUnits != c.ReadUnits || cur.WriteUnits != c.WriteUnits)) {
		mode := "{'throughput_mode': 'PAY_PER_REQUEST'}"
		if c.Mode == store.Provisioned {
			mode = fmt.Sprintf("{'throughput_mode': 'PROVISIONED', 'read_capacity_units': %d, 'write_capacity_units': %d}", c.ReadUnits, c.WriteUnits)
		}
		props = append(props, "'capacity_mode': "+mode)
	}
	if w := warmCQL(c); w != "" {
		props = append(props, "'warm_throughput': "+w)
	}
	if len(props) == 0 {
		return ""
	}
	return fmt.Sprintf("ALTER TABLE %s.%s WITH CUSTOM_PROPERTIES = {%s}", quote(ks), quote(table), strings.Join(props, ", "))
}

// warmCQL is the warm_throughput map for c's positive warm figures (the
// service's minimum is 1; a zero figure is left as it is); "" for none.
func warmCQL(c store.Capacity) string {
	var units []string
	if c.WarmRead > 0 {
		units = append(units, fmt.Sprintf("'read_units_per_second': %d", c.WarmRead))
	}
	if c.WarmWrite > 0 {
		units = append(units, fmt.Sprintf("'write_units_per_second': %d", c.WarmWrite))
	}
	if len(units) == 0 {
		return ""
	}
	return "{" + strings.Join(units, ", ") + "}"
}

// SetCapacity sets a Keyspaces table's capacity mode and warm throughput
// with ALTER TABLE … CUSTOM_PROPERTIES (its companion index table follows
// it) and records the setting in the catalog; elsewhere it records it
// only; see store.Store. A switch to on-demand that the provider's
// switch rules (Capabilities().Switches) would refuse returns
// store.ErrCapacityLimit before anything is sent; the history it is
// checked against holds the Unix ms times of earlier switches to
// on-demand and of the table's on-demand creation.
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
	rules := s.caps.Switches
	history, allowed := rules.Allowed(e.switches, now)
	switching := rules.Limited() && e.capacity.Mode == store.Provisioned && c.Mode == store.OnDemand
	if switching && !allowed {
		_, next := rules.NextToOnDemand(store.SwitchTimes(history), now)
		return store.Errorf(store.ErrCapacityLimit, "%s: %d switch(es) to on-demand (or an on-demand creation) in the last %s; %s allows %d, next at %s",
			name, len(history), rules.Window, rules.Provider, rules.MaxToOnDemand, next.UTC().Format(time.RFC3339))
	}
	if stmt := capacityCQL(s.ks, name, e.capacity, c); s.provider == Keyspaces && stmt != "" {
		tables := []string{name}
		if sc.index != "" {
			tables = append(tables, indexTableName(name))
		}
		for _, t := range tables {
			if err := s.ddl(ctx, capacityCQL(s.ks, t, e.capacity, c)); err != nil {
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
	if s.caps.WarmThroughput {
		// A zero warm figure leaves the table's as it was.
		c.WarmRead, c.WarmWrite = cmp.Or(c.WarmRead, e.capacity.WarmRead), cmp.Or(c.WarmWrite, e.capacity.WarmWrite)
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

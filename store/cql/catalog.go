package cql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// The catalog, "ebb__catalog" in the Store's keyspace, holds one row per ebb
// table: its TableSpec as JSON, its last capacity setting and its history
// of capacity-mode switches. CQL's own schema says which columns a table
// has but not what ebb means by them (which columns are values, the default
// TTL in milliseconds, the indexes), so this is how any process pointed at
// the keyspace recovers a spec. Catalog rows are only written with
// lightweight transactions, so two processes creating one table agree on
// its spec. Specs are cached in memory; a table found missing on the
// cluster is evicted from the cache.

// entry is one catalog row.
type entry struct {
	spec     store.TableSpec
	capacity store.Capacity
	switches []int64 // Unix ms of capacity-mode switches
}

func specJSON(spec store.TableSpec) string {
	b, _ := json.Marshal(spec) // a TableSpec always marshals
	return string(b)
}

func decodeEntry(spec, capacity, switches string) (entry, error) {
	var e entry
	if err := json.Unmarshal([]byte(spec), &e.spec); err != nil {
		return e, fmt.Errorf("cql: catalog spec: %w", err)
	}
	if capacity != "" {
		if err := json.Unmarshal([]byte(capacity), &e.capacity); err != nil {
			return e, fmt.Errorf("cql: catalog capacity: %w", err)
		}
	}
	if switches != "" {
		if err := json.Unmarshal([]byte(switches), &e.switches); err != nil {
			return e, fmt.Errorf("cql: catalog history: %w", err)
		}
	}
	return e, nil
}

func (s *Store) catalog() string { return quote(s.ks) + "." + quote(catalogTable) }

// ddl runs one schema statement on one live node and waits until every
// live node agrees on the schema (awaitSchema). Statements are IF [NOT]
// EXISTS, so a retry is harmless.
func (s *Store) ddl(ctx context.Context, q string) error {
	s.log.Debug("cql ddl", "cql", q)
	return s.retry.do(ctx, true, func(ctx context.Context) error {
		// One node runs the change and is then asked whether the live
		// nodes agree (see awaitSchema).
		coordinator, err := s.liveCoordinator()
		if err != nil {
			return err
		}
		err = s.session.Query(q).SetHostID(coordinator).ExecContext(ctx)
		if errors.Is(err, gocql.ErrNoConnections) && s.hostUp(coordinator) {
			// The driver cannot route to a node it sees up by its id when
			// it never looked the ring up (DisableInitialHostLookup, a
			// proxy in front): any node then runs the change and answers
			// for the schema versions.
			coordinator = ""
			err = s.session.Query(q).ExecContext(ctx)
		}
		if err != nil {
			return err
		}
		return s.awaitSchema(ctx, coordinator)
	})
}

// waitKeyspace waits, on Keyspaces, until a new keyspace is usable.
func (s *Store) waitKeyspace(ctx context.Context) error {
	if s.provider != Keyspaces {
		return nil
	}
	for {
		var name string
		err := s.session.Query(`SELECT keyspace_name FROM system_schema_mcs.keyspaces WHERE keyspace_name = ?`, s.ks).
			ScanContext(ctx, &name)
		if err == nil {
			return nil
		}
		if !errors.Is(err, gocql.ErrNotFound) {
			return mapErr(ctx, "cql: wait for keyspace", err)
		}
		if err := backoff.Sleep(ctx, s.poll); err != nil {
			return fmt.Errorf("cql: wait for keyspace %s: %w: %w", s.ks, store.ErrUnavailable, err)
		}
	}
}

// waitTables waits, on Keyspaces, until the named tables are ACTIVE (or,
// with gone, no longer exist): Keyspaces creates and drops tables
// asynchronously. Elsewhere schema agreement, awaited by ddl, is enough.
func (s *Store) waitTables(ctx context.Context, names []string, gone bool) error {
	if s.provider != Keyspaces {
		return nil
	}
	for _, name := range names {
		for {
			var status string
			err := s.session.Query(`SELECT status FROM system_schema_mcs.tables WHERE keyspace_name = ? AND table_name = ?`,
				s.ks, name).ScanContext(ctx, &status)
			switch {
			case errors.Is(err, gocql.ErrNotFound) && gone:
			case err != nil && !errors.Is(err, gocql.ErrNotFound):
				return mapErr(ctx, "cql: wait for table "+name, err)
			case err == nil && !gone && strings.EqualFold(status, "ACTIVE"):
			default:
				if err := backoff.Sleep(ctx, s.poll); err != nil {
					return fmt.Errorf("cql: wait for table %s: %w: %w", name, store.ErrUnavailable, err)
				}
				continue
			}
			break
		}
	}
	return nil
}

// readEntry reads a table's catalog row; ErrTableNotFound if none.
func (s *Store) readEntry(ctx context.Context, name string) (entry, error) {
	var spec, capacity, switches string
	err := s.retry.do(ctx, true, func(ctx context.Context) error {
		return s.session.Query(`SELECT "spec", "capacity", "switches" FROM `+s.catalog()+` WHERE "name" = ?`, name).
			ScanContext(ctx, &spec, &capacity, &switches)
	})
	if errors.Is(err, gocql.ErrNotFound) {
		return entry{}, store.Errorf(store.ErrTableNotFound, "%q", name)
	}
	if err != nil {
		return entry{}, mapErr(ctx, "cql: read catalog", err)
	}
	return decodeEntry(spec, capacity, switches)
}

// lookup returns a table's cached schema, reading the catalog on a miss
// (remote.Tables).
func (s *Store) lookup(ctx context.Context, name string) (*schema, error) {
	return s.tables.Lookup(ctx, name)
}

// loadSchema builds a table's schema from its catalog row, for the cache.
func (s *Store) loadSchema(ctx context.Context, name string) (*schema, error) {
	e, err := s.readEntry(ctx, name)
	if err != nil {
		return nil, err
	}
	return newSchema(s.ks, e.spec), nil
}

// Spec returns a table's spec from the schema cache, reading the catalog
// on a miss; see store.Catalog.
func (s *Store) Spec(ctx context.Context, name string) (store.TableSpec, error) {
	return remote.Spec(ctx, s.tables, name)
}

// tableErr maps an error from an operation on a table, evicting the cached
// schema when the cluster says the table is gone.
func (s *Store) tableErr(ctx context.Context, sc *schema, op string, err error) error {
	return s.tables.Err(ctx, sc.spec.Name, op, err)
}

// physicalExists reports whether the CQL table exists.
func (s *Store) physicalExists(ctx context.Context, name string) (bool, error) {
	var n string
	err := s.session.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?`, s.ks, name).
		ScanContext(ctx, &n)
	if errors.Is(err, gocql.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, mapErr(ctx, "cql: look up table "+name, err)
	}
	return true, nil
}

// CreateTable records the spec in the catalog, creates the CQL table (and
// its companion index table) and waits until the schema is agreed (on
// Keyspaces: until the tables are ACTIVE); see store.Store.
func (s *Store) CreateTable(ctx context.Context, spec store.TableSpec) (err error) {
	if err := spec.Validate(); err != nil {
		return err
	}
	if strings.HasPrefix(spec.Name, reservedPrefix) {
		return store.Errorf(store.ErrInvalid, "table %q: names starting with %q are reserved by the CQL backend", spec.Name, reservedPrefix)
	}
	ctx, cancel, err := s.beginTable(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer s.observe("create_table", timeNow(), &err)
	if err := s.reserveTables(ctx, spec); err != nil {
		return err
	}
	if err := s.claimName(ctx, spec); err != nil {
		return err
	}
	for _, q := range createTableCQL(s.ks, spec, s.provider, s.opts.TTLMargin, s.opts.TableOptions) {
		if err := s.ddl(ctx, q); err != nil {
			return mapErr(ctx, "create "+spec.Name, err)
		}
	}
	names := []string{spec.Name}
	if len(spec.Indexes) > 0 {
		names = append(names, indexTableName(spec.Name))
	}
	if err := s.waitTables(ctx, names, false); err != nil {
		return err
	}
	s.tables.Put(spec.Name, newSchema(s.ks, spec))
	return nil
}

// creationSwitches is the switch history a table starts with: where the
// provider counts an on-demand creation as a switch to on-demand
// (Keyspaces: back to on-demand only 24 h after creation), the creation
// time, as a JSON list of Unix ms; null elsewhere. Tables are created
// on-demand.
func (s *Store) creationSwitches() any {
	if !s.caps.Switches.CreationCounts {
		return nil
	}
	return fmt.Sprintf("[%d]", s.now().UnixMilli())
}

// claimName writes the spec into the catalog unless a row with another
// spec exists for a table that still exists (ErrTableExists). A left-over
// row without its table (a create or drop interrupted half-way) is
// replaced.
func (s *Store) claimName(ctx context.Context, spec store.TableSpec) error {
	doc := specJSON(spec)
	for range 3 {
		var cur map[string]any
		var applied bool
		// Repeating the insert is harmless: a first attempt that landed
		// unbeknown reads back as this same spec. So is the update below,
		// which the loop then re-checks the same way.
		err := s.retry.do(ctx, true, func(ctx context.Context) (err error) {
			cur = map[string]any{}
			applied, err = s.session.Query(`INSERT INTO `+s.catalog()+` ("name", "spec", "switches") VALUES (?, ?, ?) IF NOT EXISTS`, spec.Name, doc, s.creationSwitches()).
				MapScanCASContext(ctx, cur)
			return err
		})
		if err != nil {
			return mapErr(ctx, "create "+spec.Name, err)
		}
		if applied {
			return nil
		}
		old, _ := cur["spec"].(string)
		e, err := decodeEntry(old, "", "")
		if err != nil {
			return err
		}
		if e.spec.Equal(spec) {
			return nil
		}
		exists, err := s.physicalExists(ctx, spec.Name)
		if err != nil {
			return err
		}
		if exists {
			return store.Errorf(store.ErrTableExists, "%q", spec.Name)
		}
		// A stale row: replace it only if nobody changed it meanwhile.
		err = s.retry.do(ctx, true, func(ctx context.Context) (err error) {
			applied, err = s.session.Query(`UPDATE `+s.catalog()+` SET "spec" = ?, "capacity" = null, "switches" = ? WHERE "name" = ? IF "spec" = ?`,
				doc, s.creationSwitches(), spec.Name, old).MapScanCASContext(ctx, map[string]any{})
			return err
		})
		if err != nil {
			return mapErr(ctx, "create "+spec.Name, err)
		}
		if applied {
			return nil
		}
	}
	return store.Errorf(store.ErrUnavailable, "create %s: catalog row keeps changing", spec.Name)
}

// DropTable drops the CQL table and its companion, waits until they are
// gone and removes the catalog row; see store.Store.
func (s *Store) DropTable(ctx context.Context, name string) (err error) {
	ctx, cancel, done, err := s.core.BeginDrop(ctx, name)
	if done || err != nil {
		return err
	}
	defer cancel()
	defer s.observe("drop_table", timeNow(), &err)
	s.tables.Forget(name)
	for _, q := range dropTableCQL(s.ks, name) {
		if err := s.ddl(ctx, q); err != nil {
			return mapErr(ctx, "drop "+name, err)
		}
	}
	if err := s.waitTables(ctx, []string{name, indexTableName(name)}, true); err != nil {
		return err
	}
	// Repeated after an unknown outcome, the delete finds the row gone.
	if err := s.retry.do(ctx, true, func(ctx context.Context) error {
		_, err := s.session.Query(`DELETE FROM `+s.catalog()+` WHERE "name" = ? IF EXISTS`, name).
			MapScanCASContext(ctx, map[string]any{})
		return err
	}); err != nil {
		return mapErr(ctx, "drop "+name, err)
	}
	s.tables.Forget(name)
	return nil
}

// Tables lists the catalog's tables that exist in the keyspace, sorted by
// name; see store.Store. State is Keyspaces' where it reports one;
// capacity is the last one set through SetCapacity.
func (s *Store) Tables(ctx context.Context, prefix string) (_ []store.TableInfo, err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer s.observe("tables", timeNow(), &err)
	states, err := s.tableStates(ctx)
	if err != nil {
		return nil, err
	}
	var infos []store.TableInfo
	iter := s.session.Query(`SELECT "name", "spec", "capacity", "switches" FROM ` + s.catalog()).IterContext(ctx)
	var name, spec, capacity, switches string
	for iter.Scan(&name, &spec, &capacity, &switches) {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		st, ok := states[name]
		if !ok {
			continue
		}
		e, err := decodeEntry(spec, capacity, switches)
		if err != nil {
			_ = iter.Close()
			return nil, err
		}
		infos = append(infos, store.TableInfo{Spec: e.spec, State: st, Capacity: e.capacity, Switches: store.SwitchTimes(e.switches)})
	}
	if err := iter.Close(); err != nil {
		return nil, mapErr(ctx, "list tables", err)
	}
	slices.SortFunc(infos, func(a, b store.TableInfo) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	return infos, nil
}

// tableStates returns the tables of the keyspace with their state.
func (s *Store) tableStates(ctx context.Context) (map[string]store.TableState, error) {
	out := map[string]store.TableState{}
	q := `SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`
	if s.provider == Keyspaces {
		q = `SELECT table_name, status FROM system_schema_mcs.tables WHERE keyspace_name = ?`
	}
	iter := s.session.Query(q, s.ks).IterContext(ctx)
	var name, status string
	dest := []any{&name}
	if s.provider == Keyspaces {
		dest = append(dest, &status)
	}
	for iter.Scan(dest...) {
		st := store.Active
		switch strings.ToUpper(status) {
		case "CREATING":
			st = store.Creating
		case "DELETING":
			st = store.Deleting
		}
		out[name] = st
	}
	if err := iter.Close(); err != nil {
		return nil, mapErr(ctx, "list tables", err)
	}
	return out, nil
}

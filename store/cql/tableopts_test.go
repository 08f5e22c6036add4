package cql

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
)

// TestRoleOf checks that each package's tables get their role, from the
// specs those packages declare.
func TestRoleOf(t *testing.T) {
	if expiryIndexTable != expiry.IndexTable {
		t.Fatalf("expiryIndexTable = %q, package expiry names its index %q", expiryIndexTable, expiry.IndexTable)
	}
	shard := goldenSpecs["forever"]
	for _, c := range []struct {
		spec store.TableSpec
		want Role
	}{
		{shard, RoleShard},
		{lists.TableSpec("list_x", time.Hour), RoleList},
		{expiry.IndexSpec, RoleExpiry},
		{multitable.ItemsSpec, RoleShared},
		{store.MetaSpec, RoleShared},
	} {
		if got := RoleOf(c.spec); got != c.want {
			t.Errorf("RoleOf(%s) = %s, want %s", c.spec.Name, got, c.want)
		}
	}
}

// TestListGrace checks a list version's grace period and window: its TTL
// up to the hint window, windows of a twentieth of it.
func TestListGrace(t *testing.T) {
	for _, c := range []struct {
		ttl   time.Duration
		grace int64
		unit  string
		size  int64
	}{
		{time.Minute + time.Second, 61, "MINUTES", 1},
		{time.Hour, 3600, "MINUTES", 3},
		{3 * time.Hour, 10800, "MINUTES", 9},
		{7 * 24 * time.Hour, 10800, "HOURS", 9},
		{90 * 24 * time.Hour, 10800, "DAYS", 5},
	} {
		if g := graceFor(c.ttl); g != c.grace {
			t.Errorf("graceFor(%s) = %d, want %d", c.ttl, g, c.grace)
		}
		if u, s := twcsWindow(c.ttl); u != c.unit || s != c.size {
			t.Errorf("twcsWindow(%s) = %d %s, want %d %s", c.ttl, s, u, c.size, c.unit)
		}
	}
}

func TestParseTableOptions(t *testing.T) {
	m, err := ParseTableOptions([]string{"list=gc_grace_seconds = 60 AND compaction = {'class': 'UnifiedCompactionStrategy'}", "shared="})
	if err != nil {
		t.Fatal(err)
	}
	if m[RoleList] != "gc_grace_seconds = 60 AND compaction = {'class': 'UnifiedCompactionStrategy'}" || m[RoleShared] != "" || len(m) != 2 {
		t.Fatalf("parsed %q", m)
	}
	for _, bad := range []string{"list", "nosuch=gc_grace_seconds = 1", "list=gc_grace_seconds = 1; DROP TABLE x"} {
		if _, err := ParseTableOptions([]string{bad}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ParseTableOptions(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	o := DefaultOptions()
	o.Hosts, o.Keyspace = []string{"127.0.0.1"}, "ks"
	o.TableOptions = map[Role]string{"nosuch": ""}
	if err := o.Validate(); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Validate with an unknown role = %v, want ErrInvalid", err)
	}
}

// TestClusterRoleOptions checks on the node that each role's table is
// created with its options, and an operator's override instead.
func TestClusterRoleOptions(t *testing.T) {
	s := openTest(t, time.Now, func(o *Options) {
		o.TableOptions = map[Role]string{RoleShared: "gc_grace_seconds = 1234"}
	})
	ctx := t.Context()
	list := lists.TableSpec("list_roles", time.Hour)
	for _, spec := range []store.TableSpec{list, expiry.IndexSpec, multitable.ItemsSpec, goldenSpecs["forever"]} {
		if err := s.CreateTable(ctx, spec); err != nil {
			t.Fatalf("create %s: %v", spec.Name, err)
		}
	}
	for _, c := range []struct {
		table string
		grace int
		class string
	}{
		{list.Name, 3600 + int(s.opts.TTLMargin/time.Second), "TimeWindowCompactionStrategy"},
		{indexTableName(list.Name), 3600 + int(s.opts.TTLMargin/time.Second), "TimeWindowCompactionStrategy"},
		{expiry.IndexTable, 0, "SizeTieredCompactionStrategy"},
		{multitable.ItemsTable, 1234, "SizeTieredCompactionStrategy"},
		{"forever", 864000, "SizeTieredCompactionStrategy"},
	} {
		var grace int
		var compaction map[string]string
		if err := s.session.Query(`SELECT gc_grace_seconds, compaction FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?`,
			s.ks, c.table).Scan(&grace, &compaction); err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		if grace != c.grace || !strings.HasSuffix(compaction["class"], c.class) {
			t.Errorf("%s: gc_grace_seconds %d, compaction %v; want %d and %s", c.table, grace, compaction, c.grace, c.class)
		}
	}
}

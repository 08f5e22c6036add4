package cql

import (
	"errors"
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

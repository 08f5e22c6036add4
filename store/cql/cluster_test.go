package cql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
)

// These tests run when EBB_TEST_BACKENDS selects cql and then need the
// cluster in EBB_CQL_HOSTS (they fail, never skip, without it). They check
// what the conformance suite cannot see from the outside: the native TTLs
// written, the default_time_to_live, the cleanup of index entries, and how
// Open fails. They are in the package, not in cqltest (which imports it),
// so they open Stores with a local helper.

func testHosts(t *testing.T) []string {
	t.Helper()
	testselect.Need(t, testselect.CQL)
	hosts := splitEnvHosts()
	if len(hosts) == 0 {
		t.Fatalf("%s=%q selects cql, but EBB_CQL_HOSTS is not set: run through `scripts/with-cassandra.sh go test ./store/cql/`",
			testselect.Env, os.Getenv(testselect.Env))
	}
	return hosts
}

var testKeyspaceSeq int

func splitEnvHosts() []string {
	var out []string
	for _, h := range strings.Split(os.Getenv("EBB_CQL_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// dropKeyspace drops a test keyspace on a session of its own (the Store
// may be closed).
func dropKeyspace(hosts []string, ks string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := gocql.NewCluster(hosts...)
	c.Metadata.CacheMode = gocql.Disabled
	sess, err := c.CreateSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	return sess.Query(`DROP KEYSPACE IF EXISTS "` + ks + `"`).ExecContext(ctx)
}

// openTest opens a Store in a fresh keyspace, dropped when the test ends
// unless EBB_CQL_KEEP_KEYSPACES=1 (testselect.KeepCQLKeyspaces).
func openTest(t *testing.T, now func() time.Time, change func(o *Options)) *Store {
	t.Helper()
	testKeyspaceSeq++
	o := DefaultOptions()
	o.Hosts = testHosts(t)
	o.Keyspace = fmt.Sprintf("ebbt_cqlunit_%06x_%d", rand.Uint32()&0xffffff, testKeyspaceSeq)
	o.CreateKeyspace = true
	o.Now = now
	o.Timeout = 30 * time.Second
	if change != nil {
		change(&o)
	}
	s, err := Open(t.Context(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		if testselect.KeepCQLKeyspaces() {
			return
		}
		if err := dropKeyspace(o.Hosts, o.Keyspace); err != nil {
			t.Errorf("drop keyspace: %v", err)
		}
	})
	return s
}

var clusterSpec = store.TableSpec{
	Name:         "t",
	PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
	Values:       []store.Column{{Name: "v", Type: store.TypeText}, {Name: "n", Type: store.TypeInt64}},
	Indexes:      []store.IndexSpec{{Name: "by_v", Column: "v"}},
}

func TestClusterProviderAndCapabilities(t *testing.T) {
	s := openTest(t, nil, nil)
	if s.Provider() != Cassandra {
		t.Errorf("provider %s, want cassandra (scripts/with-cassandra.sh runs Apache Cassandra)", s.Provider())
	}
	if got, want := s.Capabilities(), capabilities(Cassandra); got != want {
		t.Errorf("capabilities %+v, want %+v", got, want)
	}
	for _, name := range []string{catalogTable, "ebb__x"} {
		spec := clusterSpec
		spec.Name = name
		if err := s.CreateTable(t.Context(), spec); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateTable %q: %v, want ErrInvalid (reserved)", name, err)
		}
	}
	if err := s.DropTable(t.Context(), catalogTable); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.physicalExists(t.Context(), catalogTable); err != nil || !ok {
		t.Fatalf("DropTable of the catalog's name must leave the catalog alone: exists=%v %v", ok, err)
	}
}

// TestClusterNativeTTL reads back the TTLs the cluster holds: counted from
// the Store's clock (here an hour behind the cluster's), rounded up, plus
// the margin; none for parts that never expire.
func TestClusterNativeTTL(t *testing.T) {
	now := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	s := openTest(t, func() time.Time { return now }, func(o *Options) { o.TTLMargin = 90 * time.Second })
	ctx := t.Context()
	spec := clusterSpec
	spec.DefaultTTL = 10*time.Minute + time.Millisecond
	if err := s.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var dttl int
	if err := s.session.Query(`SELECT default_time_to_live FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?`,
		s.ks, "t").Scan(&dttl); err != nil {
		t.Fatal(err)
	}
	if dttl != 601+90 {
		t.Errorf("default_time_to_live %d, want 691", dttl)
	}
	err := s.Write(ctx, "t", []store.Mutation{
		{Partition: []any{"p"}, Clustering: []any{int64(1)}, ExpiresAt: now.Add(20*time.Second + time.Millisecond),
			Cells: []store.Cell{{Column: "v", Value: "x"}, {Column: "n", Value: int64(1), ExpiresAt: now.Add(time.Hour)}}},
		{Partition: []any{"p"}, Clustering: []any{int64(2)}, NoExpiry: true, Cells: []store.Cell{{Column: "v", Value: "y"}}},
		{Partition: []any{"p"}, Clustering: []any{int64(3)}, Cells: []store.Cell{{Column: "v", Value: "z"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ttls := func(c int64) (x, v, n *int) {
		t.Helper()
		if err := s.session.Query(`SELECT TTL("_x"), TTL("v"), TTL("n") FROM "`+s.ks+`"."t" WHERE "p" = 'p' AND "c" = ?`, c).
			Scan(&x, &v, &n); err != nil {
			t.Fatal(err)
		}
		return
	}
	near := func(got *int, want int) bool { return got != nil && *got <= want && *got >= want-5 }
	if x, v, n := ttls(1); !near(x, 21+90) || !near(v, 21+90) || !near(n, 3600+90) {
		t.Errorf("row 1 TTLs %v %v %v, want ~111 111 3690", deref(x), deref(v), deref(n))
	}
	if x, v, _ := ttls(2); x != nil || v != nil {
		t.Errorf("row 2 (no expiry) TTLs %v %v, want none", deref(x), deref(v))
	}
	if x, v, _ := ttls(3); !near(x, 601+90) || !near(v, 601+90) {
		t.Errorf("row 3 (default TTL) TTLs %v %v, want ~691", deref(x), deref(v))
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestClusterIndexCleanup shows a stale companion entry skipped by lookups,
// left alone while young, removed once older than cleanupGrace, and the
// entries of a row deleted by DeleteIfExpired removed with it.
func TestClusterIndexCleanup(t *testing.T) {
	now := time.Now()
	s := openTest(t, func() time.Time { return now }, nil)
	ctx := t.Context()
	if err := s.CreateTable(ctx, clusterSpec); err != nil {
		t.Fatal(err)
	}
	up := func(c int64, v string, exp time.Time) store.Mutation {
		return store.Mutation{Partition: []any{"p"}, Clustering: []any{c}, ExpiresAt: exp, Cells: []store.Cell{{Column: "v", Value: v}}}
	}
	write := func(ms ...store.Mutation) {
		t.Helper()
		if err := s.Write(ctx, "t", ms); err != nil {
			t.Fatal(err)
		}
	}
	entries := func(v string) int {
		t.Helper()
		var n int
		if err := s.session.Query(`SELECT COUNT(*) FROM "`+s.ks+`"."`+indexTableName("t")+`" WHERE "p" = 'p' AND "_i" = 0 AND "_v" = ?`,
			[]byte(v)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	lookup := func(v string) int {
		t.Helper()
		ks, err := s.QueryIndex(ctx, "t", "by_v", []any{"p"}, v)
		if err != nil {
			t.Fatal(err)
		}
		return len(ks)
	}
	write(up(1, "red", now.Add(time.Hour)), up(2, "red", now.Add(time.Second)))
	write(up(1, "blue", now.Add(time.Hour)))
	if lookup("red") != 1 || lookup("blue") != 1 {
		t.Fatalf("lookups after a change of value: red %d blue %d, want 1 1", lookup("red"), lookup("blue"))
	}
	if entries("red") != 2 {
		t.Fatalf("%d red entries: a young stale entry must be left alone", entries("red"))
	}
	// The Store's wall clock moves past the grace: the stale entry goes,
	// the current ones stay.
	real := s.stamps.wall
	s.stamps.wall = func() time.Time { return real().Add(cleanupGrace + time.Minute) }
	if lookup("red") != 1 || entries("red") != 1 || entries("blue") != 1 {
		t.Fatalf("after cleanup: red %d entries, blue %d; want 1 1", entries("red"), entries("blue"))
	}
	// Row 2 expires; DeleteIfExpired removes it and its entry.
	now = now.Add(time.Second)
	write(store.Mutation{Kind: store.DeleteIfExpired, Partition: []any{"p"}, Clustering: []any{int64(2)}})
	if entries("red") != 0 {
		t.Fatalf("DeleteIfExpired left %d red entries", entries("red"))
	}
}

func TestClusterOpenFailures(t *testing.T) {
	hosts := testHosts(t)
	o := DefaultOptions()
	o.Hosts, o.Keyspace = hosts, "ebbt_no_such_keyspace"
	if _, err := Open(t.Context(), o); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Open of a missing keyspace without CreateKeyspace: %v, want ErrInvalid", err)
	}
	// A port nobody listens on: unavailable, within the timeout.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	o.Hosts, o.Timeout = []string{addr}, 2*time.Second
	start := time.Now()
	if _, err := Open(t.Context(), o); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open of %s: %v, want ErrUnavailable", addr, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Open of a dead host took %s", d)
	}
	// A host that accepts connections but never answers: Open gives up
	// when its context ends.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	o.Hosts, o.Timeout = []string{hang.Addr().String()}, time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := Open(ctx, o); err == nil {
		t.Error("Open of a silent host succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open did not honour its context: %s", d)
	}
}

// TestClusterClosed checks calls after Close and that Close is safe twice.
func TestClusterClosed(t *testing.T) {
	s := openTest(t, nil, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tables(t.Context(), ""); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Tables after Close: %v", err)
	}
}

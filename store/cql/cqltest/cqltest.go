// Package cqltest gives tests a CQL-backed store.Store on the cluster named
// by EBB_CQL_HOSTS (scripts/with-cassandra.sh starts a throw-away Apache
// Cassandra node and sets it). Each Store gets a keyspace of its own, named
// after the test package (ebbt_<package>_<random>_<n>), so tests share one
// cluster without seeing each other's tables; the keyspace and everything
// in it is dropped when the test ends, unless EBB_CQL_KEEP_KEYSPACES=1 says
// the cluster is thrown away after the run. The CQL tests run only when
// EBB_TEST_BACKENDS selects cql (package internal/testselect); selected
// without EBB_CQL_HOSTS, they fail.
package cqltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql"
)

// EnvHosts is the environment variable naming the cluster under test: one
// or more comma-separated host:port contact points.
const EnvHosts = "EBB_CQL_HOSTS"

// EnvReplication, when set, is the CQL replication map of the test
// keyspaces, for example {'class': 'NetworkTopologyStrategy',
// 'datacenter1': 3} on a three-node cluster (make test-cluster); unset,
// the Store's default (replication factor 1) fits a lone node.
const EnvReplication = "EBB_CQL_REPLICATION"

// Hosts returns the contact points in EBB_CQL_HOSTS, or nil.
func Hosts() []string {
	v := strings.TrimSpace(os.Getenv(EnvHosts))
	if v == "" {
		return nil
	}
	var out []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// Require skips the test when EBB_TEST_BACKENDS does not select cql, fails
// it (it never skips) when cql is selected but EBB_CQL_HOSTS is not set,
// and returns the hosts.
func Require(t testing.TB) []string {
	t.Helper()
	testselect.Need(t, testselect.CQL)
	hosts := Hosts()
	if len(hosts) == 0 {
		t.Fatalf("%s=%q selects cql, but %s is not set: run the CQL tests through `scripts/with-cassandra.sh go test ...`, "+
			"which starts a Cassandra node and sets it, or point %s at a CQL cluster (host:port,...)",
			testselect.Env, os.Getenv(testselect.Env), EnvHosts, EnvHosts)
	}
	return hosts
}

var (
	seq = atomic.Int64{}
	run = fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
	// pkg is the test binary's package name, for keyspace names.
	pkg = packageName()
)

func packageName() string {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	name = regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(strings.ToLower(name), "")
	if name == "" {
		name = "test"
	}
	if len(name) > 20 {
		name = name[:20]
	}
	return name
}

// Keyspace returns a keyspace name unique to this process and call.
func Keyspace() string {
	return fmt.Sprintf("ebbt_%s_%s_%d", pkg, run, seq.Add(1))
}

// Options returns options for EBB_CQL_HOSTS with a fresh keyspace (created
// at Open with EBB_CQL_REPLICATION), generous timeouts for a shared test
// machine, and the given clock (nil: time.Now).
func Options(t testing.TB, now func() time.Time) cql.Options {
	t.Helper()
	o := cql.DefaultOptions()
	o.Hosts = Require(t)
	o.Keyspace = Keyspace()
	o.CreateKeyspace = true
	o.Replication = os.Getenv(EnvReplication)
	o.Now = now
	o.Timeout = 30 * time.Second
	o.TableTimeout = 2 * time.Minute
	return o
}

// New opens a Store with Options(t, now); the Store is closed and its
// keyspace dropped (see testselect.KeepCQLKeyspaces) when the test ends.
func New(t testing.TB, now func() time.Time) *cql.Store {
	t.Helper()
	return Open(t, Options(t, now))
}

// Open opens a Store with the given options and registers the cleanup of
// New.
func Open(t testing.TB, o cql.Options) *cql.Store {
	t.Helper()
	t.Cleanup(func() {
		if testselect.KeepCQLKeyspaces() {
			return
		}
		if err := DropKeyspace(context.Background(), o.Hosts, o.Keyspace); err != nil {
			t.Errorf("drop test keyspace %s: %v", o.Keyspace, err)
		}
	})
	s, err := cql.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("open CQL store at %v: %v", o.Hosts, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// DropKeyspace drops a keyspace and every table in it, on a session of its
// own (the Store may already be closed). It returns once the node that ran
// the drop has applied it.
func DropKeyspace(ctx context.Context, hosts []string, keyspace string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c := gocql.NewCluster(hosts...)
	c.Timeout = time.Minute
	c.Metadata.CacheMode = gocql.Disabled
	s, err := c.CreateSession()
	if err != nil {
		return err
	}
	defer s.Close()
	// The drop runs on the first contact point, where the Stores run
	// their schema changes too (while it is up): on a cluster, changes
	// coordinated by two nodes at once left a node on another schema
	// version for minutes once its peers' pushes were dropped under load.
	// It is not awaited on the other nodes: no test uses the name again,
	// and the wait for every node to agree is a second or more per test.
	q := s.Query(`DROP KEYSPACE IF EXISTS "` + keyspace + `"`)
	first, _, _ := strings.Cut(hosts[0], ":")
	for _, h := range s.GetHosts() {
		if h.IsUp() && h.ConnectAddress().String() == first {
			q = q.SetHostID(h.HostID())
		}
	}
	return q.ExecContext(ctx)
}

var _ store.Store = (*cql.Store)(nil)

// Package cqlcluster gives tests the Apache Cassandra cluster that
// `EBB_CASSANDRA_NODES=3 scripts/with-cassandra.sh` starts on 127.0.0.1,
// .2 and .3 (make test-cluster): its contact points, a session on one node
// alone, each node's view of the schema, and the means to SIGKILL a node
// and start it again. Its tests run when EBB_TEST_BACKENDS selects
// cql-cluster (package internal/testselect), and fail, never skip, when the
// cluster is then missing. It is for tests only.
package cqlcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store/cql"
	"github.com/ebb-data/ebb/store/cql/cqltest"
)

// The environment scripts/with-cassandra.sh sets for a cluster.
const (
	// EnvHosts holds the nodes' contact points, host:port, node 1 first.
	EnvHosts = "EBB_CQL_CLUSTER_HOSTS"
	// EnvDir is the cluster's directory: node I's files are in nI, its
	// process id in nI/pid, and nI/start starts it again.
	EnvDir = "EBB_CQL_CLUSTER_DIR"
)

// Replication is the replication of the tests' keyspaces: every row on
// the three nodes, as production clusters keep it, so that LOCAL_QUORUM
// (the Store's default consistency) is two of three replicas.
const Replication = `{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}`

// Cluster is the cluster under test.
type Cluster struct {
	// Hosts are the nodes' contact points; node I is Hosts[I-1].
	Hosts []string
	dir   string
}

// Require skips the test unless EBB_TEST_BACKENDS selects cql-cluster,
// fails it when the cluster is then missing, and returns the cluster once
// every node serves and all agree on one schema version.
func Require(t testing.TB) *Cluster {
	t.Helper()
	testselect.Need(t, testselect.CQLCluster)
	c := &Cluster{dir: os.Getenv(EnvDir)}
	for _, h := range strings.Split(os.Getenv(EnvHosts), ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.Hosts = append(c.Hosts, h)
		}
	}
	if len(c.Hosts) < 3 || c.dir == "" {
		t.Fatalf("%s=%q selects %s, but %s and %s do not name a cluster of three nodes: run the tests through "+
			"`EBB_CASSANDRA_NODES=3 scripts/with-cassandra.sh go test ...` (make test-cluster)",
			testselect.Env, os.Getenv(testselect.Env), testselect.CQLCluster, EnvHosts, EnvDir)
	}
	c.WaitAgreed(t, 3*time.Minute)
	return c
}

// Options returns Store options on every node, in a fresh keyspace of
// replication factor 3 created at Open, with the Store's default
// consistency (LOCAL_QUORUM).
func (c *Cluster) Options(t testing.TB, hosts ...string) cql.Options {
	t.Helper()
	o := cql.DefaultOptions()
	o.Hosts = c.Hosts
	if len(hosts) > 0 {
		o.Hosts = hosts
	}
	o.Keyspace = cqltest.Keyspace()
	o.CreateKeyspace = true
	o.Replication = Replication
	o.Timeout = 30 * time.Second
	o.TableTimeout = 2 * time.Minute
	return o
}

// Open opens a Store with o; it is closed, and its keyspace dropped, when
// the test ends.
func (c *Cluster) Open(t testing.TB, o cql.Options) *cql.Store {
	t.Helper()
	return cqltest.Open(t, o)
}

// Node returns node i's session alone (no other node is contacted), closed
// when the test ends.
func (c *Cluster) Node(t testing.TB, i int) *gocql.Session {
	t.Helper()
	s, err := c.session(i)
	if err != nil {
		t.Fatalf("connect to node %d (%s): %v", i, c.Hosts[i-1], err)
	}
	t.Cleanup(s.Close)
	return s
}

func (c *Cluster) session(i int) (*gocql.Session, error) {
	host := c.Hosts[i-1]
	cc := gocql.NewCluster(host)
	addr, _, _ := strings.Cut(host, ":")
	cc.HostFilter = gocql.WhiteListHostFilter(addr)
	cc.DisableInitialHostLookup = true
	cc.Metadata.CacheMode = gocql.Disabled
	cc.Timeout = 20 * time.Second
	cc.ConnectTimeout = 5 * time.Second
	cc.Consistency = gocql.One
	return cc.CreateSession()
}

// View is one node's view of the cluster's schema versions: its own, and
// the ones it last heard by gossip from each peer, by address.
type View struct {
	Local string
	Peers map[string]string
}

// Versions returns the distinct versions of the view, sorted.
func (v View) Versions() []string {
	out := []string{v.Local}
	for _, p := range v.Peers {
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// View reads node i's view of the schema versions.
func (c *Cluster) View(ctx context.Context, i int) (View, error) {
	s, err := c.session(i)
	if err != nil {
		return View{}, err
	}
	defer s.Close()
	var v View
	var local gocql.UUID
	if err := s.Query(`SELECT schema_version FROM system.local WHERE key = 'local'`).ScanContext(ctx, &local); err != nil {
		return View{}, err
	}
	v.Local = local.String()
	v.Peers = map[string]string{}
	iter := s.Query(`SELECT peer, schema_version FROM system.peers`).IterContext(ctx)
	var peer string
	var ver gocql.UUID
	for iter.Scan(&peer, &ver) {
		v.Peers[peer] = ver.String()
	}
	return v, iter.Close()
}

// Agreed reports whether the given nodes (every node when none is given)
// each see all of them with one and the same schema version. It returns
// what it saw, for a message.
func (c *Cluster) Agreed(ctx context.Context, nodes ...int) (bool, string) {
	if len(nodes) == 0 {
		nodes = []int{1, 2, 3}
	}
	var seen []string
	versions := map[string]bool{}
	for _, i := range nodes {
		v, err := c.View(ctx, i)
		if err != nil {
			return false, fmt.Sprintf("node %d: %v", i, err)
		}
		seen = append(seen, fmt.Sprintf("node %d: %s, peers %v", i, v.Local, v.Peers))
		versions[v.Local] = true
		for _, j := range nodes {
			if j == i {
				continue
			}
			addr, _, _ := strings.Cut(c.Hosts[j-1], ":")
			p, ok := v.Peers[addr]
			if !ok {
				return false, fmt.Sprintf("node %d does not list node %d among its peers", i, j)
			}
			versions[p] = true
		}
	}
	return len(versions) == 1, strings.Join(seen, "; ")
}

// WaitAgreed waits up to timeout until every node serves and all agree on
// the schema (Agreed), and fails the test otherwise.
func (c *Cluster) WaitAgreed(t testing.TB, timeout time.Duration, nodes ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		ok, seen := c.Agreed(ctx, nodes...)
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster: no schema agreement within %s: %s", timeout, seen)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Cluster) pid(i int) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "n"+strconv.Itoa(i), "pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Up reports whether node i's process runs.
func (c *Cluster) Up(i int) bool {
	pid, err := c.pid(i)
	return err == nil && running(pid)
}

// running reports whether process pid exists and has not exited. A node
// is no child of the test process (its start script put it in the
// background); once killed it stays a zombie until whatever adopted it
// reaps it, up to a second or two here. A zombie holds no memory, ports
// or files, so it counts as gone. Without /proc, kill(pid, 0) decides.
func running(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and
	// may itself hold any byte.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// Kill SIGKILLs node i, as a crash or a power cut would end it (with the
// default periodic commit log, the last writes it acknowledged may be lost
// from its disk), and waits until the process is gone. When the test ends
// with the node still down, it is started again and the cluster awaited,
// so that the next test finds three nodes.
func (c *Cluster) Kill(t testing.TB, i int) {
	t.Helper()
	pid, err := c.pid(i)
	if err != nil {
		t.Fatalf("node %d: %v", i, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill node %d (pid %d): %v", i, pid, err)
	}
	for running(pid) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("node %d (%s) killed", i, c.Hosts[i-1])
	t.Cleanup(func() {
		if !c.Up(i) {
			c.Start(t, i)
		}
	})
}

// Start starts node i again with its data, and waits until it serves and
// every node agrees on the schema.
func (c *Cluster) Start(t testing.TB, i int) {
	t.Helper()
	begin := time.Now()
	out, err := exec.Command(filepath.Join(c.dir, "n"+strconv.Itoa(i), "start")).CombinedOutput()
	if err != nil {
		t.Fatalf("start node %d: %v: %s", i, err, out)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s, err := c.session(i)
		if err == nil {
			s.Close()
			break
		}
		if !c.Up(i) || time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(c.dir, "n"+strconv.Itoa(i), "node.log"))
			t.Fatalf("node %d did not serve again: %v\n%s", i, err, tail(log, 4000))
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.WaitAgreed(t, 3*time.Minute)
	t.Logf("node %d (%s) serving again, schema agreed, after %s", i, c.Hosts[i-1], time.Since(begin).Round(time.Millisecond))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Owner returns the node whose token range holds token: the nodes own one
// token each, spread evenly over Murmur3's range in node order
// (scripts/with-cassandra.sh), and node I owns the tokens after node I-1's
// up to its own. With replication factor 3 every node holds a replica;
// the owner is the first of them.
func (c *Cluster) Owner(token int64) int {
	n := len(c.Hosts)
	step := int64(9223372036854775807) / int64(n) * 2
	for i := 1; i <= n; i++ {
		if token <= -9223372036854775807-1+int64(i-1)*step {
			return i
		}
	}
	return 1
}

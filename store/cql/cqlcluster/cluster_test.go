package cqlcluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/lease"
	"github.com/ebb-data/ebb/internal/parallel"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql"
	"github.com/ebb-data/ebb/store/cql/cqlcluster"
	"github.com/ebb-data/ebb/timeseries"
)

// The tests of this file take the three nodes of
// `EBB_CASSANDRA_NODES=3 scripts/with-cassandra.sh` (make test-cluster):
// they run one after the other, never in parallel, and each begins with
// three nodes agreeing on the schema. A node's death and its restart
// (half a minute or more on a loaded machine, commit log replayed and
// schema awaited) are what the tests spend most of their time on, so
// TestNodeOutages kills two nodes in turn and runs every check of a node
// down on those two outages.

var kvSpec = store.TableSpec{
	Name:         "kv",
	PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}},
	Values:       []store.Column{{Name: "v", Type: store.TypeInt64}},
}

// TestNodeOutages kills a node under writes and starts it again, then
// kills the node owning the lease row's token and, while it is down,
// checks at the same time what each part of ebb needs from two nodes of
// three: that acknowledged writes are not lost (writes), that schema
// changes go through (schema), and that the lease and its fence hold
// (lease); each then checks what holds once the node is back.
func TestNodeOutages(t *testing.T) {
	c := cqlcluster.Require(t)
	w := newWrites(t, c)
	sc := newSchemaChanges(t, c)
	l := newLeaseRace(t, c)
	owner := l.owner
	first := owner%3 + 1

	w.killDuringWrites(t, first)
	w.readAll(t, fmt.Sprintf("node %d down", first))
	c.Start(t, first)

	l.hold(t)
	c.Kill(t, owner)
	var writesOK, schemaOK, leaseOK bool
	t.Run("NodeDown", func(t *testing.T) {
		t.Run("Writes", func(t *testing.T) {
			t.Parallel()
			w.readAll(t, fmt.Sprintf("node %d back, node %d down", first, owner))
			writesOK = true
		})
		t.Run("Schema", func(t *testing.T) {
			t.Parallel()
			sc.withNodeDown(t, owner)
			schemaOK = true
		})
		t.Run("Lease", func(t *testing.T) {
			t.Parallel()
			l.withNodeDown(t)
			leaseOK = true
		})
	})
	c.Start(t, owner)
	t.Run("NodeBack", func(t *testing.T) {
		if !writesOK || !schemaOK || !leaseOK {
			t.Skipf("a check with node %d down failed (writes %v, schema %v, lease %v)", owner, writesOK, schemaOK, leaseOK)
		}
		t.Run("Schema", func(t *testing.T) { sc.afterReturn(t, owner) })
		t.Run("Lease", func(t *testing.T) { l.afterReturn(t) })
	})
}

// writes is the check of a node killed during writes: several writers
// write while a node is SIGKILLed, then every acknowledged row is read at
// LOCAL_QUORUM with that node still down, and again after it came back
// and another node was killed. An acknowledged write is on two replicas
// at least, so no single node's loss (with its unsynced commit log) loses
// it, and reads keep answering with two of three nodes.
type writes struct {
	c     *cqlcluster.Cluster
	s     store.Store
	acked []string
}

func newWrites(t *testing.T, c *cqlcluster.Cluster) *writes {
	t.Helper()
	s := c.Open(t, c.Options(t))
	if err := s.CreateTable(t.Context(), kvSpec); err != nil {
		t.Fatal(err)
	}
	return &writes{c: c, s: s}
}

// killDuringWrites runs four writers, kills node i while they write, and
// stops them 3 s later: writes must keep being acknowledged with the node
// down.
func (w *writes) killDuringWrites(t *testing.T, i int) {
	t.Helper()
	ctx := t.Context()
	var (
		mu     sync.Mutex
		failed atomic.Int64
		killed atomic.Bool
		after  atomic.Int64 // writes acknowledged after the kill
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	for n := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("w%d-%06d", n, seq)
				err := w.s.Write(ctx, kvSpec.Name, []store.Mutation{{
					Kind: store.Upsert, Partition: []any{k}, Cells: []store.Cell{{Column: "v", Value: int64(seq)}},
				}})
				if err != nil {
					// Not acknowledged: the write may or may not be stored,
					// and the test asks nothing of it.
					failed.Add(1)
					continue
				}
				wasKilled := killed.Load()
				mu.Lock()
				w.acked = append(w.acked, k)
				mu.Unlock()
				if wasKilled {
					after.Add(1)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	w.c.Kill(t, i)
	killed.Store(true)
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d writes acknowledged (%d after the kill), %d failed", len(w.acked), after.Load(), failed.Load())
	if after.Load() == 0 {
		t.Fatal("no write was acknowledged with a node down: LOCAL_QUORUM needs two of three replicas only")
	}
}

// readAll reads every acknowledged row, sixteen reads at a time (each
// read is a round trip to two replicas; one after the other, the reads of
// a few thousand rows took a minute on a loaded machine).
func (w *writes) readAll(t *testing.T, when string) {
	t.Helper()
	tasks := make([]func(context.Context) error, len(w.acked))
	for i, k := range w.acked {
		tasks[i] = func(ctx context.Context) error {
			if _, err := w.s.Get(ctx, kvSpec.Name, []any{k}, nil); err != nil {
				return fmt.Errorf("acknowledged row %s: %w", k, err)
			}
			return nil
		}
	}
	if err := parallel.Run(t.Context(), 16, tasks); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
}

// schemaChanges is the check of schema changes with a node down: tables
// are created and dropped, as the shard manager does at every pass, while
// a node is down; each change succeeds as soon as the live nodes agree on
// the schema, the two live nodes then hold one schema version, and the
// node that was down takes the changes when it comes back, so that the
// three agree again.
type schemaChanges struct {
	c *cqlcluster.Cluster
	o cql.Options
	s *cql.Store
}

func schemaSpec(name string) store.TableSpec { sp := kvSpec; sp.Name = name; return sp }

func newSchemaChanges(t *testing.T, c *cqlcluster.Cluster) *schemaChanges {
	t.Helper()
	o := c.Options(t)
	s := c.Open(t, o)
	if err := s.CreateTable(t.Context(), schemaSpec("shard_old")); err != nil {
		t.Fatal(err)
	}
	return &schemaChanges{c: c, o: o, s: s}
}

func (sc *schemaChanges) withNodeDown(t *testing.T, down int) {
	ctx := t.Context()
	begin := time.Now()
	retried(t, fmt.Sprintf("create a table with node %d down", down), func() error { return sc.s.CreateTable(ctx, schemaSpec("shard_new")) })
	retried(t, fmt.Sprintf("drop a table with node %d down", down), func() error { return sc.s.DropTable(ctx, "shard_old") })
	took := time.Since(begin)
	t.Logf("create and drop with node %d down took %s", down, took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("create and drop with a node down took %s: the wait for schema agreement must leave a dead node out", took)
	}
	var live []int
	for i := 1; i <= 3; i++ {
		if i != down {
			live = append(live, i)
		}
	}
	// Each live node holds the change the moment the Store returns: their
	// own versions agree. What a node says of its peers' versions comes by
	// gossip, a second or more behind, so those views are given time to
	// converge, and must: two versions lasting would be a split schema.
	own := map[string]int{}
	for _, i := range live {
		v, err := sc.c.View(ctx, i)
		if err != nil {
			t.Fatalf("node %d's schema version: %v", i, err)
		}
		own[v.Local] = i
	}
	if len(own) != 1 {
		t.Fatalf("the live nodes hold different schema versions after the changes: %v", own)
	}
	sc.c.WaitAgreed(t, 30*time.Second, live...)
	if err := sc.s.Write(ctx, "shard_new", []store.Mutation{{Kind: store.Upsert, Partition: []any{"a"}, Cells: []store.Cell{{Column: "v", Value: int64(1)}}}}); err != nil {
		t.Fatalf("write to the new table with node %d down: %v", down, err)
	}
}

// afterReturn runs once node back was started again (Start waits for the
// three to agree): it holds the new table and not the dropped one.
func (sc *schemaChanges) afterReturn(t *testing.T, back int) {
	ctx := t.Context()
	tables := map[string]bool{}
	iter := sc.c.Node(t, back).Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, sc.o.Keyspace).IterContext(ctx)
	var name string
	for iter.Scan(&name) {
		tables[name] = true
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if !tables["shard_new"] || tables["shard_old"] {
		t.Fatalf("node %d after its return holds tables %v: want shard_new and not shard_old", back, tables)
	}
}

// retried runs a schema change as the shard manager's passes do: one that
// fails must fail clearly, as unavailable (the manager then logs it and
// tries again at its next pass), and a later pass must succeed.
func retried(t *testing.T, what string, change func() error) {
	t.Helper()
	for pass := 1; ; pass++ {
		err := change()
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrUnavailable) || pass == 3 {
			t.Fatalf("%s, pass %d: %v (want success, or ErrUnavailable and success at a later pass)", what, pass, err)
		}
		t.Logf("%s, pass %d: %v; retried", what, pass, err)
	}
}

// leaseRace is the check of the lease through the death of the node that
// owns the lease row's token, with the lease's production duration: the
// holder keeps the lease through the kill (a renewal may time out while
// the other nodes have not yet convicted the dead one, and the lease
// recognises its own write afterwards; Paxos at LOCAL_SERIAL then needs
// two of three replicas). The holder renews on its own schedule, as ebb's
// renewer does, so that the rival's attempts, slow while the node is
// down, never delay a renewal past the lease's margin. A rival never
// takes the lease while it is renewed, and once the holder stops
// renewing, the rival takes it with the next epoch and the old holder's
// fence fails.
type leaseRace struct {
	a, b  *lease.Lease
	sa    store.Store
	epoch int64
	owner int
}

const leaseRole = "shard-manager"

// newLeaseRace opens the holder's Store on node 1 first and the rival's
// on node 3 then 2, lets the holder take the lease, and finds the node
// owning the lease row's token (the row's partition key is the same in
// every keyspace, and so is its token).
func newLeaseRace(t *testing.T, c *cqlcluster.Cluster) *leaseRace {
	t.Helper()
	ctx := t.Context()
	o := c.Options(t)
	sa := c.Open(t, o)
	ob := o
	ob.Hosts = []string{c.Hosts[2], c.Hosts[1]}
	ob.CreateKeyspace = false
	sb := c.Open(t, ob)

	const d = lease.DefaultDuration
	a, err := lease.New(lease.Options{Store: sa, Role: leaseRole, Holder: "a", Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	b, err := lease.New(lease.Options{Store: sb, Role: leaseRole, Holder: "b", Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := a.Acquire(ctx); err != nil || !held {
		t.Fatalf("a acquires: %v, %v", held, err)
	}
	var token int64
	if err := c.Node(t, 1).Query(fmt.Sprintf(`SELECT token(kind) FROM "%s".%s WHERE kind = 'lease' LIMIT 1`, o.Keyspace, store.MetaTable)).
		Consistency(gocql.One).ScanContext(ctx, &token); err != nil {
		t.Fatalf("the lease row's token: %v", err)
	}
	l := &leaseRace{a: a, b: b, sa: sa, owner: c.Owner(token)}
	t.Logf("lease row token %d, owned by node %d", token, l.owner)
	return l
}

// hold lets the holder take the lease again (it lapsed while another
// node's outage was checked) right before its node is killed, and keeps
// the epoch it holds.
func (l *leaseRace) hold(t *testing.T) {
	t.Helper()
	if held, err := l.a.Acquire(t.Context()); err != nil || !held {
		t.Fatalf("a acquires before node %d's death: %v, %v", l.owner, held, err)
	}
	l.epoch = l.a.Status().Record.Epoch
}

// withNodeDown runs from the moment the owner was killed.
func (l *leaseRace) withNodeDown(t *testing.T) {
	ctx := t.Context()
	a, b, owner := l.a, l.b, l.owner
	const d = lease.DefaultDuration

	// The holder renews as ebb's renewer does (roles.go): each attempt
	// bounded by d/6, a failed one retried d/10 later; here every d/10
	// throughout, in its own goroutine, so that the rival's attempts
	// (slow themselves while a node is down) never delay it. The rival
	// finds the lease held each time, for d and until a renewal succeeded
	// after the kill.
	begin := time.Now()
	var renewed, failed atomic.Int32
	stop := make(chan struct{})
	renewer := make(chan error, 1)
	go func() {
		for {
			actx, cancel := context.WithTimeout(ctx, d/6)
			held, err := a.Acquire(actx)
			cancel()
			switch {
			case err == nil && held:
				renewed.Add(1)
			case err == nil:
				renewer <- fmt.Errorf("a lost the lease %s after the kill (holder %q, epoch %d)",
					time.Since(begin).Round(time.Millisecond), a.Status().Record.Holder, a.Status().Record.Epoch)
				return
			case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
				failed.Add(1)
				t.Logf("a's renewal %s after the kill: %v", time.Since(begin).Round(time.Millisecond), err)
			default:
				renewer <- fmt.Errorf("a's renewal with node %d down: %w", owner, err)
				return
			}
			select {
			case <-stop:
				renewer <- nil
				return
			case <-time.After(d / 10):
			}
		}
	}()
	for time.Since(begin) < d || renewed.Load() == 0 {
		if time.Since(begin) > 2*d {
			close(stop)
			t.Fatalf("no renewal succeeded within %s of node %d's death (%d failed); renewer: %v", 2*d, owner, failed.Load(), <-renewer)
		}
		if held, err := b.Acquire(ctx); held {
			close(stop)
			t.Fatalf("b took the lease while a renewed it (a holds: %v); renewer: %v", a.Held(), <-renewer)
		} else if err != nil {
			t.Logf("b's attempt: %v", err)
		}
		select {
		case err := <-renewer:
			t.Fatal(err)
		case <-time.After(d / 10):
		}
	}
	close(stop)
	if err := <-renewer; err != nil {
		t.Fatal(err)
	}
	if err := a.Fence(ctx); err != nil {
		t.Fatalf("a's fence after its renewals with node %d down: %v", owner, err)
	}
	t.Logf("with node %d down: %d renewals, %d failed", owner, renewed.Load(), failed.Load())

	// The holder stops renewing: the rival takes over with the next epoch
	// once the lease has lapsed, and the old holder's fence fails.
	deadline := time.Now().Add(3 * d)
	for {
		held, err := b.Acquire(ctx)
		if held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not take the lapsed lease within %s: %v", 3*d, err)
		}
		time.Sleep(d / 10)
	}
	if got := b.Status().Record.Epoch; got != l.epoch+1 {
		t.Errorf("b's epoch %d, want %d", got, l.epoch+1)
	}
	if err := a.Fence(ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("a's fence after b took over: %v, want ErrNotHeld", err)
	}
}

// afterReturn runs once the owner is back: its return (its restart
// outlasts the lease, which b did not renew meanwhile) changes nothing:
// b takes the lease again, a stays fenced off.
func (l *leaseRace) afterReturn(t *testing.T) {
	ctx := t.Context()
	if held, err := l.b.Acquire(ctx); err != nil || !held {
		t.Fatalf("b acquires after node %d's return: %v, %v", l.owner, held, err)
	}
	doc, err := store.Meta{S: l.sa}.Get(ctx, "lease", leaseRole)
	if err != nil {
		t.Fatal(err)
	}
	var rec lease.Record
	if err := json.Unmarshal(doc, &rec); err != nil || rec.Holder != "b" || rec.Epoch <= l.epoch {
		t.Fatalf("lease after node %d's return: %s (%v), want b's with an epoch above %d", l.owner, doc, err, l.epoch)
	}
	if err := l.a.Fence(ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("a's fence after the node's return: %v, want ErrNotHeld", err)
	}
}

// TestSameIndexCreatedThroughTwoNodes opens two DBs, as two `ebb serve`
// replicas would be, each with node 1 or node 2 as its contact point (the
// node their schema changes run on), and creates the same index in both
// at the same moment: both succeed, one CQL table exists per name with
// one table id on every node, and the nodes agree on the schema.
func TestSameIndexCreatedThroughTwoNodes(t *testing.T) {
	c := cqlcluster.Require(t)
	ctx := t.Context()
	o1 := c.Options(t, c.Hosts[0])
	s1 := c.Open(t, o1)
	o2 := o1
	o2.Hosts = []string{c.Hosts[1]}
	o2.CreateKeyspace = false
	s2 := c.Open(t, o2)
	var dbs []*ebb.DB
	for _, s := range []store.Store{s1, s2} {
		db, err := ebb.Open(ctx, ebb.Options{Store: s, NoBackground: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		dbs = append(dbs, db)
	}

	cfg := timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 2 * time.Hour}
	start := make(chan struct{})
	errs := make([]error, len(dbs))
	created := make([]bool, len(dbs))
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, created[i], errs[i] = db.Indexes().Create(ctx, cfg)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create through node %d: %v", i+1, err)
		}
	}
	if created[0] == created[1] {
		t.Errorf("created = %v: want exactly one creation, the other finding the same index", created)
	}

	c.WaitAgreed(t, time.Minute)
	// Each node's tables of the keyspace, with their ids: the same on
	// every node, else two creations raced into two tables of one name.
	var want map[string]string
	for i := 1; i <= 3; i++ {
		got := map[string]string{}
		iter := c.Node(t, i).Query(`SELECT table_name, id FROM system_schema.tables WHERE keyspace_name = ?`, o1.Keyspace).IterContext(ctx)
		var name string
		var id gocql.UUID
		for iter.Scan(&name, &id) {
			got[name] = id.String()
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			want = got
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("node %d's tables %v differ from node 1's %v", i, got, want)
		}
	}
	shards := 0
	for name := range want {
		if strings.HasPrefix(name, "ev_") {
			shards++
		}
	}
	idx, err := dbs[1].Indexes().Get(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if shards == 0 || shards != len(idx.Shards) {
		t.Fatalf("%d shard tables on the nodes (%v), index lists %d shards", shards, want, len(idx.Shards))
	}
	t.Logf("%d tables, one id each on the three nodes; %d shards", len(want), shards)
}

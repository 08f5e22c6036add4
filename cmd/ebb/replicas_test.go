package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
)

// The endpoints the multi-replica test runs on: dynalite, and Amazon's
// DynamoDB Local, which has transactions and a TTL process that really
// deletes. `make test` starts both and selects them; a selected one
// without its endpoint fails the test, never skips it.
var replicaEndpoints = []struct {
	name   string
	target dynamotest.Target
}{
	{"dynalite", dynamotest.Dynalite},
	{"dynamodb-local", dynamotest.DynamoDBLocal},
}

// TestReplicas runs three `ebb serve` processes on one DynamoDB endpoint
// with one-second leases and checks that they are as safe as one: every
// replica serves reads and writes, one replica at a time runs the shard
// manager and the sweeper, a killed leader is replaced within two lease
// periods, a paused one acts on nothing when it wakes, no shard is dropped
// twice or early, and expired rows are deleted once. The endpoints' runs
// overlap: each is mostly waiting out lease periods, on a table prefix of
// its own.
func TestReplicas(t *testing.T) {
	for _, ep := range replicaEndpoints {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			testReplicas(t, ep.target.Require(t))
		})
	}
}

const (
	replicaLease  = time.Second
	indexBucket   = 2 * time.Second
	indexRetained = 4 * time.Second
)

type cluster struct {
	t        *testing.T
	endpoint string
	prefix   string
	procs    map[string]*proc
}

func (c *cluster) start(id string) *proc {
	c.t.Helper()
	p := startServe(c.t, "--addr", "127.0.0.1:0", "--backend", "dynamodb",
		"--dynamodb-endpoint", c.endpoint, "--dynamodb-table-prefix", c.prefix,
		"--replica-id", id, "--lease-duration", replicaLease.String(),
		"--reconcile-interval", "200ms", "--sweep-interval", "200ms", "--log-level", "debug")
	c.procs[id] = p
	return p
}

type leaseView struct {
	Role     string `json:"role"`
	Holder   string `json:"holder"`
	Epoch    int64  `json:"epoch"`
	HeldHere bool   `json:"held_here"`
}

// leases returns what one replica reports of the leases, by role.
func (c *cluster) leases(p *proc) map[string]leaseView {
	c.t.Helper()
	status, body := get(c.t, p.url+"/v1/admin/cluster", "")
	var out struct {
		Replica string      `json:"replica"`
		Leases  []leaseView `json:"leases"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &out) != nil {
		c.t.Fatalf("admin cluster: %d %s", status, body)
	}
	m := map[string]leaseView{}
	for _, l := range out.Leases {
		m[l.Role] = l
	}
	return m
}

// leader waits until exactly one live replica holds role (one of among),
// and returns it with its epoch.
func (c *cluster) leader(role string, among []string, within time.Duration) (string, int64) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var holders []string
		var epoch int64
		for _, id := range among {
			if l := c.leases(c.procs[id])[role]; l.HeldHere {
				holders = append(holders, id)
				epoch = l.Epoch
			}
		}
		if len(holders) > 1 {
			c.t.Fatalf("%s: %d replicas hold the lease at once: %v", role, len(holders), holders)
		}
		if len(holders) == 1 {
			return holders[0], epoch
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: no replica of %v holds the lease after %v", role, among, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func send(t *testing.T, method, url string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String()
}

// metric reads one unlabelled-or-summed counter from a replica's /metrics.
func metric(t *testing.T, p *proc, name string) float64 {
	t.Helper()
	_, body := get(t, p.url+"/metrics", "")
	sum := 0.0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func testReplicas(t *testing.T, endpoint string) {
	c := &cluster{t: t, endpoint: endpoint, prefix: fmt.Sprintf("ebbr%06x_", rand.Uint32()&0xffffff), procs: map[string]*proc{}}
	ids := []string{"r1", "r2", "r3"}
	for _, id := range ids {
		c.start(id)
	}
	mgr, epoch := c.leader("shard-manager", ids, 5*replicaLease)
	sweeper, sweeperEpoch := c.leader("sweeper", ids, 5*replicaLease)
	t.Logf("shard manager on %s (epoch %d), sweeper on %s", mgr, epoch, sweeper)

	// Writes and reads go through every replica.
	if status, body := send(t, "PUT", c.procs["r1"].url+"/v1/indexes/ev", map[string]any{
		"table_bucket": indexBucket.String(), "partition_bucket": "1s", "retention": indexRetained.String(), "runway": 3,
	}); status != 201 {
		t.Fatalf("create index: %d %s", status, body)
	}
	now := time.Now().UTC()
	if status, body := send(t, "POST", c.procs["r2"].url+"/v1/indexes/ev/events", map[string]any{"events": []map[string]any{
		{"index_id": "a", "event_id": "e1", "timestamp": now.Format(time.RFC3339Nano), "payload": "AA=="},
	}}); status != 200 {
		t.Fatalf("write through r2: %d %s", status, body)
	}
	from, to := now.Add(-time.Second).Format(time.RFC3339Nano), now.Add(time.Second).Format(time.RFC3339Nano)
	if status, body := get(t, c.procs["r3"].url+"/v1/indexes/ev/events?index_id=a&from="+from+"&to="+to, ""); status != 200 || !strings.Contains(body, `"e1"`) {
		t.Fatalf("read through r3: %d %s", status, body)
	}

	// The sweeper: rows with a one-second TTL written through every
	// replica are deleted once, by the one sweeper.
	if status, body := send(t, "PUT", c.procs["r3"].url+"/v1/tables/sessions", map[string]any{"default_ttl": "1s"}); status != 201 {
		t.Fatalf("create shared table: %d %s", status, body)
	}
	before := 0.0
	for _, id := range ids {
		before += metric(t, c.procs[id], "ebb_expiry_deleted_total")
	}
	const items = 30
	for i := range items {
		p := c.procs[ids[i%3]]
		if status, body := send(t, "PUT", fmt.Sprintf("%s/v1/tables/sessions/items/k%d", p.url, i), map[string]any{
			"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "attributes": map[string]int{"i": i},
		}); status != 200 {
			t.Fatalf("put item %d: %d %s", i, status, body)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	var deleted float64
	for {
		deleted = -before
		for _, id := range ids {
			deleted += metric(t, c.procs[id], "ebb_expiry_deleted_total")
		}
		// Each item is one row plus its listing entry; both expire.
		if deleted >= items || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if deleted < items {
		t.Fatalf("sweepers deleted %v rows within 20s, want at least the %d expired items", deleted, items)
	}
	// Only the lease holder sweeps, so nothing is paid twice while no
	// replica is paused: the deletes are the expired rows (each item and
	// its listing entry), never more.
	if deleted > 2*items {
		t.Fatalf("sweepers deleted %v rows for %d items: some were deleted twice", deleted, items)
	}
	// On a loaded machine a 1 s lease may change hands (a renewal that
	// missed its deadline); then the sweeps are shared between holders in
	// turn, and the bound above is what holds them to one delete per row.
	if now, nowEpoch := c.leader("sweeper", ids, 5*replicaLease); now == sweeper && nowEpoch == sweeperEpoch {
		for _, id := range ids {
			if id != sweeper && metric(t, c.procs[id], "ebb_expiry_deleted_total") > 0 {
				t.Fatalf("replica %s swept without holding the sweeper lease", id)
			}
		}
	} else {
		t.Logf("the sweeper lease moved from %s (epoch %d) to %s (epoch %d) while sweeping", sweeper, sweeperEpoch, now, nowEpoch)
	}

	// SIGKILL the shard manager's leader: another replica takes over within
	// two lease periods, and shards keep being created ahead.
	killed := mgr
	_ = c.procs[killed].cmd.Process.Kill()
	c.procs[killed].wait(t, 10*time.Second)
	alive := without(ids, killed)
	took := time.Now()
	mgr2, epoch2 := c.leader("shard-manager", alive, 2*replicaLease+time.Second)
	t.Logf("after SIGKILL of %s: %s took over in %v at epoch %d", killed, mgr2, time.Since(took).Round(time.Millisecond), epoch2)
	if epoch2 <= epoch {
		t.Fatalf("new leader's epoch %d is not above the old one's %d", epoch2, epoch)
	}
	time.Sleep(2 * indexBucket)
	checkRunway(t, c.procs[alive[0]])

	// SIGSTOP the new leader past its lease, let the last replica take
	// over, then SIGCONT: the old leader must act on nothing.
	paused := mgr2
	last := without(alive, paused)
	if err := c.procs[paused].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	mgr3, epoch3 := c.leader("shard-manager", last, 2*replicaLease+time.Second)
	if epoch3 <= epoch2 {
		t.Fatalf("epoch %d after the pause, %d before", epoch3, epoch2)
	}
	time.Sleep(2 * replicaLease)
	if err := c.procs[paused].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * replicaLease)
	// The woken replica must not believe in the lease it held before the
	// pause. On a loaded machine a 1 s lease can still change hands
	// legitimately afterwards (a renewal that missed its deadline), so a
	// lease held later is checked by its epoch: it must be a new one, won
	// after the last replica's.
	if l := c.leases(c.procs[paused])["shard-manager"]; l.HeldHere && l.Epoch <= epoch3 {
		t.Fatalf("the paused replica %s believes it holds the lease after waking: %+v", paused, l)
	}
	if h, e := c.leader("shard-manager", alive, time.Second); h != mgr3 && e <= epoch3 {
		t.Fatalf("leadership moved back to %s at epoch %d after the pause, not above %d", h, e, epoch3)
	} else if h != mgr3 {
		t.Logf("leadership changed hands again after the pause: %s at epoch %d (a renewal missed on a loaded machine)", h, e)
	}
	if log := c.procs[paused].stderr.String(); !strings.Contains(log, "lease lost") {
		t.Fatalf("the woken replica %s did not log losing its lease:\n%s", paused, tail(log, 40))
	}
	checkRunway(t, c.procs[mgr3])

	// No shard was dropped twice, and none before its time.
	checkDrops(t, c)
}

var dropLine = regexp.MustCompile(`time=(\S+) .*msg="reconcile action applied".* op=drop table=(\S+)`)

// checkDrops reads every replica's log: each drop names a shard once, and
// only after the shard's end plus the retention.
func checkDrops(t *testing.T, c *cluster) {
	t.Helper()
	seen := map[string]string{}
	for id, p := range c.procs {
		for _, m := range dropLine.FindAllStringSubmatch(p.stderr.String(), -1) {
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				t.Fatalf("log time %q: %v", m[1], err)
			}
			table := m[2]
			if other, dup := seen[table]; dup {
				t.Fatalf("shard %s dropped twice: by %s and %s", table, other, id)
			}
			seen[table] = id
			i := strings.LastIndexByte(table, '_')
			secs, err := strconv.ParseInt(table[i+1:], 10, 64)
			if err != nil {
				t.Fatalf("shard name %q: %v", table, err)
			}
			if end := time.Unix(secs, 0).Add(indexBucket); at.Before(end.Add(indexRetained)) {
				t.Fatalf("%s dropped live shard %s at %s (it ends %s, kept %s)", id, table, at, end, indexRetained)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no shard was dropped during the run: the test did not exercise drops")
	}
	t.Logf("%d shards dropped, each once", len(seen))
}

// checkRunway checks that shards exist ahead of now.
func checkRunway(t *testing.T, p *proc) {
	t.Helper()
	status, body := get(t, p.url+"/v1/indexes/ev", "")
	var idx struct {
		RunwayRemaining string `json:"runway_remaining"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &idx) != nil {
		t.Fatalf("get index: %d %s", status, body)
	}
	d, err := time.ParseDuration(idx.RunwayRemaining)
	if err != nil || d < indexBucket {
		t.Fatalf("runway remaining %q, want at least one shard ahead", idx.RunwayRemaining)
	}
}

func without(ids []string, drop string) []string {
	var out []string
	for _, id := range ids {
		if id != drop {
			out = append(out, id)
		}
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

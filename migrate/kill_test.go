package migrate_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// A backfill child is this test binary re-run with envChildDir set: it
// opens the embedded store in that directory, runs the backfill of index
// "ev" to its end (or until it is killed), and reports on stdout:
//
//	resume <scanned> <pass>   the checkpoint it starts from
//	step <scanned> <copied>   after each step's checkpoint is saved
//	paused                    stopped after a copy, before its checkpoint
//	done <scanned> <copied> <pass>
//
// Every row it writes to a shard is logged to envChildLog before the
// write, so the log over-counts copies, never under-counts them.
const (
	envChildDir   = "EBB_MIGRATE_KILL_CHILD_DIR"
	envChildLog   = "EBB_MIGRATE_KILL_CHILD_LOG"
	envChildRun   = "EBB_MIGRATE_KILL_CHILD_RUN"
	envChildPause = "EBB_MIGRATE_KILL_CHILD_PAUSE" // rows copied before the child pauses
	killBatch     = 250
)

var killIndex = timeseries.Config{Name: "ev", TableBucket: 6 * time.Hour, PartitionBucket: time.Hour, Retention: 24 * time.Hour, Runway: 2}

// copyLog logs the rows written to the index's shards, and pauses after
// pause rows when asked.
type copyLog struct {
	store.Store
	f              *os.File
	run            string
	pause, written int
}

func (c *copyLog) Write(ctx context.Context, table string, batch []store.Mutation) error {
	if !strings.HasPrefix(table, killIndex.Name+"_") {
		return c.Store.Write(ctx, table, batch)
	}
	var b strings.Builder
	for _, m := range batch {
		fmt.Fprintf(&b, "%s %s %v %v\n", c.run, table, m.Partition, m.Clustering)
	}
	if _, err := c.f.WriteString(b.String()); err != nil {
		return err
	}
	if err := c.Store.Write(ctx, table, batch); err != nil {
		return err
	}
	c.written += len(batch)
	if c.pause > 0 && c.written >= c.pause {
		// Copied, not checkpointed: the worst moment to die.
		fmt.Println("paused")
		time.Sleep(time.Hour)
	}
	return nil
}

// backfillChild is the child's main; it returns the exit code.
func backfillChild(dir string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "backfill child:", err)
		return 1
	}
	ctx := context.Background()
	f, err := os.OpenFile(os.Getenv(envChildLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	// Synced writes, as a server's: what was acknowledged survives.
	raw, err := ebbpebble.Open(dir, ebbpebble.Options{})
	if err != nil {
		return fail(err)
	}
	defer raw.Close()
	pause, _ := strconv.Atoi(os.Getenv(envChildPause))
	st := &copyLog{Store: raw, f: f, run: os.Getenv(envChildRun), pause: pause}
	idx, err := timeseries.New(ctx, st, timeseries.Options{})
	if err != nil {
		return fail(err)
	}
	svc, err := migrate.New(ctx, st, idx, migrate.Options{})
	if err != nil {
		return fail(err)
	}
	defer svc.Close()
	status, err := svc.Status(ctx, killIndex.Name)
	if err != nil {
		return fail(err)
	}
	var from migrate.Checkpoint
	if status.Backfill != nil {
		from = *status.Backfill
	}
	fmt.Printf("resume %d %d\n", from.Scanned, from.Pass)
	cp, err := svc.Backfill(ctx, killIndex.Name, migrate.BackfillOptions{BatchSize: killBatch, Progress: func(c migrate.Checkpoint) {
		fmt.Printf("step %d %d\n", c.Scanned, c.Copied)
	}})
	if err != nil {
		return fail(err)
	}
	fmt.Printf("done %d %d %d\n", cp.Scanned, cp.Copied, cp.Pass)
	return 0
}

// child is a running backfill child.
type child struct {
	cmd    *exec.Cmd
	lines  chan string // its stdout, closed at its end
	done   chan struct{}
	stderr bytes.Buffer
}

func startBackfillChild(t *testing.T, dir, log, run string, pause int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildDir+"="+dir, envChildLog+"="+log, envChildRun+"="+run,
		envChildPause+"="+strconv.Itoa(pause))
	c := &child{cmd: cmd, lines: make(chan string, 1000), done: make(chan struct{})}
	cmd.Stderr = &c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
	})
	return c
}

// next returns the child's next line; ok is false at its end.
func (c *child) next(t *testing.T) (fields []string, ok bool) {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		return strings.Fields(l), ok
	case <-time.After(time.Minute):
		t.Fatalf("backfill child silent for a minute; stderr:\n%s", c.stderr.String())
		return nil, false
	}
}

// kill SIGKILLs the child and waits for it.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBackfillKilled runs the backfill in a child process and SIGKILLs it
// mid-run, twice: once right after it copied rows it had not yet
// checkpointed (the worst moment), once at a moment of the scheduler's
// choosing. Each restart resumes from the checkpoint, and copies again
// at most the one batch that was copied but not checkpointed; the rows
// written to the shards are counted by instrumenting the store's writes.
func TestBackfillKilled(t *testing.T) {
	const n = 20000
	dir := filepath.Join(t.TempDir(), "db")
	log := filepath.Join(t.TempDir(), "copies")
	seedKillStore(t, dir, n)

	// Run 1 dies inside its fifth step, after a copy.
	c := startBackfillChild(t, dir, log, "1", 4*killBatch+1)
	if f, _ := c.next(t); len(f) != 3 || f[0] != "resume" || f[1] != "0" {
		t.Fatalf("first run starts from %v, want a fresh pass", f)
	}
	steps := 0
	for {
		f, ok := c.next(t)
		if !ok {
			t.Fatalf("run 1 ended without pausing; stderr:\n%s", c.stderr.String())
		}
		if f[0] == "paused" {
			break
		}
		steps++
	}
	c.kill(t)
	if steps != 4 {
		t.Fatalf("run 1 checkpointed %d steps before its pause, want 4", steps)
	}

	// Run 2 resumes at the fifth step, and dies wherever the kill lands:
	// unthrottled, it is copying or checkpointing nearly all the time.
	// Should the kill be late, it pauses half-way rather than finish.
	c = startBackfillChild(t, dir, log, "2", n/2)
	f, _ := c.next(t)
	if len(f) != 3 || f[0] != "resume" || atoi(t, f[1]) != 4*killBatch || f[2] != "1" {
		t.Fatalf("run 2 starts from %v, want pass 1 at %d rows scanned", f, 4*killBatch)
	}
	f, _ = c.next(t)
	if f[0] != "step" || atoi(t, f[1]) != 5*killBatch {
		t.Fatalf("run 2's first step ends at %v, want %d rows scanned: it did not resume", f, 5*killBatch)
	}
	last := atoi(t, f[1])
	for last < 10*killBatch {
		f, ok := c.next(t)
		if !ok || f[0] != "step" {
			t.Fatalf("run 2 said %v; stderr:\n%s", f, c.stderr.String())
		}
		last = atoi(t, f[1])
	}
	time.Sleep(rand.N(30 * time.Millisecond)) // a step takes a few ms
	c.kill(t)
	// Steps it reported before the kill landed.
	for l := range c.lines {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "step" {
			last = atoi(t, f[1])
		}
	}

	// Run 3 resumes where run 2 checkpointed last (at most a step after
	// the last one it reported), and finishes.
	c = startBackfillChild(t, dir, log, "3", 0)
	f, _ = c.next(t)
	if len(f) != 3 || f[0] != "resume" || f[2] != "1" {
		t.Fatalf("run 3 starts from %v", f)
	}
	from := atoi(t, f[1])
	if from < last || from > last+killBatch {
		t.Fatalf("run 3 resumes at %d rows scanned; run 2 reported %d", from, last)
	}
	f, _ = c.next(t)
	if f[0] != "step" || atoi(t, f[1]) != from+killBatch {
		t.Fatalf("run 3's first step ends at %v, want %d rows scanned", f, from+killBatch)
	}
	for f[0] != "done" {
		var ok bool
		if f, ok = c.next(t); !ok {
			t.Fatalf("run 3 failed; stderr:\n%s", c.stderr.String())
		}
	}
	if atoi(t, f[1]) != n || atoi(t, f[2]) != n || f[3] != "1" {
		t.Fatalf("run 3 ended with %v, want %d scanned and copied in pass 1", f, n)
	}
	<-c.done

	// The copies, run by run: a restart copies again at most one batch.
	copies := readCopyLog(t, log)
	seen := map[string]bool{}
	total := 0
	for run := 1; run <= 3; run++ {
		again := 0
		for _, k := range copies[run] {
			if seen[k] {
				again++
			}
		}
		for _, k := range copies[run] {
			seen[k] = true
		}
		total += len(copies[run])
		t.Logf("run %d copied %d rows, %d of them again", run, len(copies[run]), again)
		if again > killBatch {
			t.Fatalf("run %d copied %d rows again, more than a batch (%d)", run, again, killBatch)
		}
		if run == 2 && again == 0 {
			t.Fatal("run 2 copied nothing again: run 1 did not die between a copy and its checkpoint")
		}
	}
	if len(seen) != n || total > n+2*killBatch {
		t.Fatalf("%d rows copied, %d distinct; want %d distinct and at most %d in all", total, len(seen), n, n+2*killBatch)
	}
	if got := countShardRows(t, dir); got != n {
		t.Fatalf("the shards hold %d rows, want %d", got, n)
	}
}

// seedKillStore makes the embedded store in dir: index ev migrating from
// a legacy table of n live rows over the last 20 hours.
func seedKillStore(t *testing.T, dir string, n int) {
	t.Helper()
	ctx := t.Context()
	st, idx := openKillStore(t, dir)
	defer st.Close()
	if _, _, err := idx.Create(ctx, killIndex); err != nil {
		t.Fatal(err)
	}
	svc, err := migrate.New(ctx, st, idx, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, _, err := svc.Start(ctx, killIndex.Name, migrate.Settings{Legacy: migrate.LegacyConfig{Kind: migrate.KindTable, Table: "legacy_ev"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rows := make([]migrate.Row, n)
	for i := range rows {
		ts := now.Add(-20 * time.Hour).Add(time.Duration(i) * 20 * time.Hour / time.Duration(n)).Truncate(time.Millisecond)
		rows[i] = migrate.Row{Event: timeseries.Event{IndexID: fmt.Sprintf("id%d", i%5), EventID: fmt.Sprintf("e%06d", i), Timestamp: ts, Payload: []byte{byte(i)}}, ExpiresAt: ts.Add(24 * time.Hour)}
	}
	if w, err := svc.WriteLegacy(ctx, killIndex.Name, rows); err != nil || w != n {
		t.Fatalf("seeded %d rows: %v", w, err)
	}
}

// openKillStore opens the embedded store in dir and the index service on
// it; the caller closes the store.
func openKillStore(t *testing.T, dir string) (*ebbpebble.Store, *timeseries.Service) {
	t.Helper()
	st, err := ebbpebble.Open(dir, ebbpebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := timeseries.New(t.Context(), st, timeseries.Options{})
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	return st, idx
}

// readCopyLog returns the shard rows each run logged, by run; a line cut
// short by a kill is left out.
func readCopyLog(t *testing.T, path string) map[int][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]string{}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		run, key, _ := strings.Cut(string(b[:i]), " ")
		r, _ := strconv.Atoi(run)
		out[r] = append(out[r], key)
		b = b[i+1:]
	}
	return out
}

// countShardRows counts the rows index ev's shards hold.
func countShardRows(t *testing.T, dir string) int {
	t.Helper()
	ctx := t.Context()
	st, idx := openKillStore(t, dir)
	defer st.Close()
	n := 0
	for i := range 5 {
		q := timeseries.Query{IndexID: fmt.Sprintf("id%d", i), Limit: 10000}
		for {
			p, err := idx.QueryShards(ctx, killIndex.Name, q)
			if err != nil {
				t.Fatal(err)
			}
			n += len(p.Events)
			if p.NextPageToken == nil {
				break
			}
			q.PageToken = p.NextPageToken
		}
	}
	return n
}

package ebb_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// expiringOptions are a DB's options for tests that wait for the sweeper:
// short passes, so that rows leave soon after they expire.
func expiringOptions(o ebb.Options) ebb.Options {
	o.SweepInterval = 50 * time.Millisecond
	o.ReconcileInterval = time.Hour
	return o
}

// addExpiring adds n list items of feature id that expire within a
// second, and returns their item keys' entity ids.
func addExpiring(t *testing.T, db *ebb.DB, id lists.FeatureID, prefix string, n int) []string {
	t.Helper()
	ctx := t.Context()
	if _, _, err := db.Lists().CreateFeatureWith(ctx, id, lists.FeatureConfig{TTL: time.Second, Expiry: store.ExpirySweep}); err != nil {
		t.Fatal(err)
	}
	var entities []string
	for i := range n {
		e := fmt.Sprintf("%s%03d", prefix, i)
		entities = append(entities, e)
		if _, err := db.Lists().Add(ctx, id, e, []lists.Item{{Value: []byte("v"), Timestamp: time.Now().Add(-800 * time.Millisecond)}}); err != nil {
			t.Fatal(err)
		}
	}
	return entities
}

// readExpirations reads the log from after until it has want events or
// the deadline passes, and returns them with the cursor it reached.
func readExpirations(t *testing.T, db *ebb.DB, after string, want int, visible func(*ebb.Expiration) bool) ([]ebb.Expiration, string) {
	t.Helper()
	var got []ebb.Expiration
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		p, err := db.Expirations(t.Context(), ebb.ExpirationsQuery{After: after, Limit: want - len(got), Wait: time.Second, Visible: visible})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Expirations...)
		after = p.Next
	}
	return got, after
}

// TestExpirationsOnEveryBackend checks, on each backend, that the rows the
// sweeper removes appear in the log once each, named by their feature and
// key, with their expiry before their removal, and that a list item and a
// shared-table item are both named.
func TestExpirationsOnEveryBackend(t *testing.T) {
	testbackend.Each(t, func(t *testing.T, open testbackend.Factory) {
		ctx := t.Context()
		db, err := ebb.Open(ctx, expiringOptions(ebb.Options{Store: open(t, nil)}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		id := lists.FeatureID{EntityType: "user", Feature: "seen"}
		entities := addExpiring(t, db, id, "u", 20)
		if _, _, err := db.Tables().CreateTable(ctx, "sessions", multitable.Config{Expiry: store.ExpirySweep}); err != nil {
			t.Fatal(err)
		}
		ttl := time.Second
		if _, err := db.Tables().Put(ctx, "sessions", multitable.PutItem{Key: "s1", Timestamp: time.Now(), TTL: &ttl}); err != nil {
			t.Fatal(err)
		}
		got, _ := readExpirations(t, db, "", len(entities)+1, nil)
		seen := map[string]int{}
		last := map[string]ebb.Expiration{} // per feature, its last event read
		for _, ev := range got {
			// Per feature, in removal order.
			f := ev.Kind + "/" + ev.Name + "/" + ev.Feature
			if prev, ok := last[f]; ok && ev.RemovedAt.Before(prev.RemovedAt) {
				t.Errorf("%s: %s removed at %s delivered after %s removed at %s", f, ev.Key, ev.RemovedAt, prev.Key, prev.RemovedAt)
			}
			last[f] = ev
			if ev.Type != ebb.ExpirationRow || ev.RemovedAt.Before(ev.ExpiresAt) || len(ev.Key) == 0 {
				t.Errorf("malformed event %+v", ev)
				continue
			}
			seen[ev.Kind+"/"+ev.Name+"/"+ev.Feature+"/"+ev.Key[0]]++
		}
		for _, e := range entities {
			if n := seen["list/user/seen/"+e]; n != 1 {
				t.Errorf("list item of %s delivered %d times, want once", e, n)
			}
		}
		if n := seen["table/sessions//s1"]; n != 1 {
			t.Errorf("shared-table item delivered %d times, want once; got %v", n, seen)
		}
	})
}

// sharedStore is one backend as a replica sees it: another replica's DB
// opens it too, so closing a DB leaves it open.
type sharedStore struct{ store.Store }

func (s sharedStore) Close() error        { return nil }
func (s sharedStore) Unwrap() store.Store { return s.Store }

// TestExpirationsCursorAcrossReplicas checks, on each backend, that a
// cursor one replica handed out reads on at another replica of the same
// store: replica A sweeps and is read half-way, then goes; replica B takes
// the sweeper's lease, sweeps more, and reading on from A's cursor at B
// delivers the rest of A's expirations and B's, each once, none of those
// read before.
func TestExpirationsCursorAcrossReplicas(t *testing.T) {
	testbackend.Each(t, func(t *testing.T, open testbackend.Factory) {
		st := open(t, nil)
		replica := func() *ebb.DB {
			t.Helper()
			o := expiringOptions(ebb.Options{Store: sharedStore{st}, LeaseDuration: time.Second})
			db, err := ebb.Open(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		}
		a := replica()
		first := addExpiring(t, a, lists.FeatureID{EntityType: "user", Feature: "seen"}, "a", 6)
		if all, _ := readExpirations(t, a, "", len(first), nil); len(all) != len(first) {
			t.Fatalf("replica A logged %d expirations, want %d", len(all), len(first))
		}
		half, cursor := readExpirations(t, a, "", len(first)/2, nil)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		b := replica()
		second := addExpiring(t, b, lists.FeatureID{EntityType: "user", Feature: "later"}, "b", 4)
		rest, _ := readExpirations(t, b, cursor, len(first)-len(half)+len(second), nil)
		seen := map[string]int{}
		for _, ev := range half {
			seen[ev.Key[0]]++
		}
		for _, ev := range rest {
			seen[ev.Key[0]]++
		}
		for _, k := range append(first, second...) {
			if seen[k] != 1 {
				t.Errorf("%s delivered %d times across the replicas, want once", k, seen[k])
			}
		}
	})
}

// TestExpirationsScopedByVisibility checks that a reader given a filter
// sees only the events it accepts, and that the skipped ones still move
// its cursor.
func TestExpirationsScopedByVisibility(t *testing.T) {
	ctx := t.Context()
	db, err := ebb.Open(ctx, expiringOptions(ebb.Options{Store: testbackend.Pebble(t, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	addExpiring(t, db, lists.FeatureID{EntityType: "user", Feature: "seen"}, "u", 5)
	addExpiring(t, db, lists.FeatureID{EntityType: "admin", Feature: "seen"}, "a", 5)
	all, end := readExpirations(t, db, "", 10, nil)
	if len(all) != 10 {
		t.Fatalf("%d events, want 10", len(all))
	}
	users, next := readExpirations(t, db, "", 10, func(ev *ebb.Expiration) bool { return ev.Name == "user" })
	if len(users) != 5 {
		t.Fatalf("%d events for user, want 5", len(users))
	}
	for _, ev := range users {
		if ev.Name != "user" {
			t.Fatalf("event of %s seen by a reader of user", ev.Name)
		}
	}
	// The rows' part of the cursor must match: the filtered read moves past
	// the rows it does not show. The shards' part is not compared: with no
	// shard dropped, a read moves it to the hour before its clock's
	// (explog's readSource), so two reads either side of an hour differ.
	rowsPart := func(cursor string) string { rows, _, _ := strings.Cut(cursor, "-"); return rows }
	if rowsPart(next) != rowsPart(end) {
		t.Fatalf("filtered read stopped at %s, want the rows' part of %s", next, end)
	}
}

// TestExpirationsWaitWakes checks that a long poll returns as soon as an
// expiration is recorded, well before its timeout.
func TestExpirationsWaitWakes(t *testing.T) {
	ctx := t.Context()
	db, err := ebb.Open(ctx, expiringOptions(ebb.Options{Store: testbackend.Pebble(t, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	p, err := db.Expirations(ctx, ebb.ExpirationsQuery{})
	if err != nil || len(p.Expirations) != 0 {
		t.Fatalf("empty log read %v, %v", p, err)
	}
	start := time.Now()
	addExpiring(t, db, lists.FeatureID{EntityType: "user", Feature: "seen"}, "u", 1)
	p, err = db.Expirations(ctx, ebb.ExpirationsQuery{After: p.Next, Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Expirations) != 1 {
		t.Fatalf("long poll returned %d events, want 1", len(p.Expirations))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("long poll took %s: it did not wake on the expiration", took)
	}
}

// TestExpirationsOff checks the off switch.
func TestExpirationsOff(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: testbackend.Pebble(t, nil), NoExpirations: true, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Expirations(t.Context(), ebb.ExpirationsQuery{}); err != ebb.ErrExpirationsOff {
		t.Fatalf("read of a DB without the log: %v, want ErrExpirationsOff", err)
	}
}

// crashEnv carries the crash test's data directory to its child process.
const crashEnv = "EBB_TEST_EXPIRATIONS_CRASH_DIR"

// TestExpirationsSurviveKill checks that the log and its cursor are
// durable: a child process expires rows, reads half of their events,
// saves its cursor and kills itself without closing anything; the test
// then reopens the directory and reads on from the cursor, and every
// expiration is delivered exactly once across the two reads. More rows
// then expire and are delivered after the old ones.
func TestExpirationsSurviveKill(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(t, dir)
		return
	}
	dir := t.TempDir()
	out := runKilledChild(t, crashEnv, dir)
	saved, err := os.ReadFile(filepath.Join(dir, "read"))
	if err != nil {
		t.Fatalf("child saved nothing: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(saved)), "\n")
	cursor, first := lines[0], lines[1:]

	db, err := ebb.Open(t.Context(), expiringOptions(ebb.Options{Dir: filepath.Join(dir, "data")}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	rest, next := readExpirations(t, db, cursor, crashRows-len(first), nil)
	seen := map[string]int{}
	for _, k := range first {
		seen[k]++
	}
	for _, ev := range rest {
		seen[ev.Key[0]]++
	}
	for i := range crashRows {
		if k := fmt.Sprintf("u%03d", i); seen[k] != 1 {
			t.Errorf("%s delivered %d times across the restart, want once", k, seen[k])
		}
	}
	if p, err := db.Expirations(t.Context(), ebb.ExpirationsQuery{After: next}); err != nil || len(p.Expirations) != 0 {
		t.Fatalf("read past the end: %d events, %v", len(p.Expirations), err)
	}
	// The sequence goes on past the old entries after the restart.
	addExpiring(t, db, lists.FeatureID{EntityType: "user", Feature: "later"}, "w", 3)
	more, _ := readExpirations(t, db, next, 3, nil)
	if len(more) != 3 {
		t.Fatalf("%d events after the restart, want 3", len(more))
	}
	for _, ev := range more {
		if ev.Feature != "later" {
			t.Fatalf("event %+v after the restart, want only the new feature's", ev)
		}
	}
}

const crashRows = 40

// runKilledChild runs the calling test again in a child process, with
// env set to dir (which the test reads to play the child's part), and
// fails the test unless the child ends killed by SIGKILL. It returns the
// child's output.
func runKilledChild(t *testing.T, env, dir string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err == nil || !(errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL) {
		t.Fatalf("child was not killed: %v\n%s", err, out)
	}
	return out
}

// crashChild is the child side of TestExpirationsSurviveKill.
func crashChild(t *testing.T, dir string) {
	db, err := ebb.Open(context.Background(), expiringOptions(ebb.Options{Dir: filepath.Join(dir, "data")}))
	if err != nil {
		t.Fatal(err)
	}
	addExpiring(t, db, lists.FeatureID{EntityType: "user", Feature: "seen"}, "u", crashRows)
	// Wait until all are logged, then read only half of them.
	if all, _ := readExpirations(t, db, "", crashRows, nil); len(all) != crashRows {
		t.Fatalf("%d events, want %d", len(all), crashRows)
	}
	half, cursor := readExpirations(t, db, "", crashRows/2, nil)
	out := cursor + "\n"
	for _, ev := range half {
		out += ev.Key[0] + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "read"), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// dropping is a DB on the embedded backend whose clock a test moves,
// without background work: the test reconciles its indexes itself.
type dropping struct {
	db *ebb.DB
	mu sync.Mutex
	at time.Time
}

func openDropping(t *testing.T) *dropping {
	t.Helper()
	d := &dropping{at: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)}
	db, err := ebb.Open(t.Context(), ebb.Options{Store: testbackend.Pebble(t, d.now), Now: d.now, NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	d.db = db
	return d
}

func (d *dropping) now() time.Time { d.mu.Lock(); defer d.mu.Unlock(); return d.at }

// reconcileFor moves the clock on by span, half an hour at a time,
// reconciling the indexes after each step. Reconcile runs unfenced, as
// `ebb index reconcile` does; the background pass needs the lease.
func (d *dropping) reconcileFor(t *testing.T, span time.Duration, ro shardmgr.RunOptions, indexes ...string) {
	t.Helper()
	for step := time.Duration(0); step < span; step += 30 * time.Minute {
		d.mu.Lock()
		d.at = d.at.Add(30 * time.Minute)
		d.mu.Unlock()
		for _, name := range indexes {
			if _, _, err := d.db.Indexes().Reconcile(t.Context(), name, ro); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestExpirationsRecordShardDrops checks that each shard the manager drops
// is logged once, with its index and time range, and that a token
// scoped to another index would not see it.
func TestExpirationsRecordShardDrops(t *testing.T) {
	ctx := t.Context()
	d := openDropping(t)
	if _, _, err := d.db.Indexes().Create(ctx, timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	d.reconcileFor(t, 4*time.Hour, shardmgr.RunOptions{DropStats: true}, "ev")
	db := d.db
	p, err := db.Expirations(ctx, ebb.ExpirationsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	shards := map[string]int{}
	for _, ev := range p.Expirations {
		if ev.Type != ebb.ExpirationShard || ev.Kind != "index" || ev.Name != "ev" || !ev.To.After(ev.From) || ev.RemovedAt.Before(ev.To) || ev.Rows == nil {
			t.Fatalf("malformed shard event %+v", ev)
		}
		shards[ev.Shard]++
	}
	if len(shards) < 2 {
		t.Fatalf("%d shards dropped over four hours of a two-hour index, want at least 2: %+v", len(shards), p.Expirations)
	}
	for s, n := range shards {
		if n != 1 {
			t.Errorf("drop of %s logged %d times", s, n)
		}
	}
	other, err := db.Expirations(ctx, ebb.ExpirationsQuery{Visible: func(ev *ebb.Expiration) bool { return ev.Name == "other" }})
	if err != nil || len(other.Expirations) != 0 {
		t.Fatalf("a reader of another index sees %d events, %v", len(other.Expirations), err)
	}
}

// TestExpirationsNameTheArchive checks that the drop of a shard archived
// first names its archive's object, which is there, and that the drop of
// a shard of an index without an archive names none.
func TestExpirationsNameTheArchive(t *testing.T) {
	ctx := t.Context()
	d := openDropping(t)
	db := d.db
	dir := t.TempDir()
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	for _, cfg := range []timeseries.Config{
		{Name: "arch", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 2 * time.Hour, Archive: &timeseries.ArchiveConfig{To: loc}},
		{Name: "plain", TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 2 * time.Hour},
	} {
		if _, _, err := db.Indexes().Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Indexes().WriteEvents(ctx, cfg.Name, []timeseries.Event{{IndexID: "a", EventID: "e1", Timestamp: d.now().Add(-time.Minute)}}); err != nil {
			t.Fatal(err)
		}
	}
	d.reconcileFor(t, 4*time.Hour, shardmgr.RunOptions{}, "arch", "plain")
	p, err := db.Expirations(ctx, ebb.ExpirationsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	drops := map[string]int{}
	for _, ev := range p.Expirations {
		if ev.Type != ebb.ExpirationShard {
			continue
		}
		drops[ev.Name]++
		switch ev.Name {
		case "arch":
			want := loc + "/arch/" + ev.Shard + ".parquet"
			if ev.Archive != want {
				t.Errorf("drop of %s names archive %q, want %q", ev.Shard, ev.Archive, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "arch", ev.Shard+".parquet")); err != nil {
				t.Errorf("the archive the drop of %s names: %v", ev.Shard, err)
			}
		case "plain":
			if ev.Archive != "" {
				t.Errorf("drop of %s of an index without an archive names archive %q", ev.Shard, ev.Archive)
			}
		}
	}
	if drops["arch"] < 2 || drops["plain"] < 2 {
		t.Fatalf("drops logged per index %v, want at least 2 of each", drops)
	}
}

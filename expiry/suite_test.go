package expiry

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// suiteConfig scales the backend-independent tests to what a backend can
// do in test time.
type suiteConfig struct {
	// massRows is how many rows expire in the same second in MassExpiry.
	massRows int
	// downtime is how long the sweeper is down in CatchUpAfterDowntime, and
	// catchUp the options used there (fewer, wider windows for slow
	// backends: every window costs Shards queries).
	downtime time.Duration
	catchUp  Options
	// parallel runs the tests in parallel, each on its Store: where the
	// backend serves concurrent requests in parallel, their round trips
	// overlap (the CQL variant took 58 s one at a time, 30 s in parallel
	// under the race detector). Dynalite serves one request at a time and
	// the embedded backend uses the CPU the tests share: neither gains.
	parallel bool
}

// runSuite runs the expiry tests that every backend must pass.
func runSuite(t *testing.T, f storetest.Factory, cfg suiteConfig) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f storetest.Factory, cfg suiteConfig)
	}{
		{"DeletesExactlyWhatExpired", testDeletesExactlyWhatExpired},
		{"TickCadenceMissesNothing", testTickCadenceMissesNothing},
		{"CatchUpAfterDowntime", testCatchUpAfterDowntime},
		{"ExtensionSurvives", testExtensionSurvives},
		{"ExtensionRace", testExtensionRace},
		{"CrashBetweenIndexAndRow", testCrashBetweenIndexAndRow},
		{"SlowWriteIsReindexed", testSlowWriteIsReindexed},
		{"MassExpiry", testMassExpiry},
		{"RetriesThrottling", testRetriesThrottling},
		{"DroppedTable", testDroppedTable},
		{"BadInputWritesNothing", testBadInputWritesNothing},
		{"UnindexedWrites", testUnindexedWrites},
		{"LayoutConflict", testLayoutConflict},
		{"Metrics", testMetrics},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if cfg.parallel {
				t.Parallel()
			}
			tc.fn(t, f, cfg)
		})
	}
}

func testDeletesExactlyWhatExpired(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{})
	ttlSpec := itemsSpec
	ttlSpec.Name = "ttl_items"
	ttlSpec.DefaultTTL = 4 * time.Second
	if err := e.st.CreateTable(e.ctx, ttlSpec); err != nil {
		t.Fatal(err)
	}
	immortalMarker := item("a", 2, time.Time{})
	immortalMarker.NoExpiry = true
	immortalMarker.Cells = []store.Cell{{Column: "v", Value: []byte("v"), ExpiresAt: at(3 * time.Second)}}
	longCell := item("a", 5, at(2*time.Second))
	longCell.Cells[1].ExpiresAt = at(6 * time.Second)
	e.write("items",
		item("a", 1, at(2*time.Second)), // row expiry
		immortalMarker,                  // marker never expires: indexed at its cell's expiry, survives
		item("a", 3, time.Time{}),       // no expiry: never indexed
		item("a", 4, at(5*time.Second)),
		longCell, // dead only when its last cell is
	)
	e.write("ttl_items", item("a", 1, time.Time{})) // default TTL: 4 s, plus Grace
	if n := len(e.indexEntries(at(0), at(time.Minute))); n != 5 {
		t.Fatalf("index holds %d entries, want 5 (every upsert carrying an expiry)", n)
	}

	steps := []struct {
		at         time.Duration
		items, ttl []int64
	}{
		{1999 * time.Millisecond, []int64{1, 2, 3, 4, 5}, []int64{1}},
		{2 * time.Second, []int64{2, 3, 4, 5}, []int64{1}}, // expiry == now means gone
		{3 * time.Second, []int64{2, 3, 4, 5}, []int64{1}},
		{5 * time.Second, []int64{2, 3, 5}, nil},
		{5999 * time.Millisecond, []int64{2, 3, 5}, nil},
		{6 * time.Second, []int64{2, 3}, nil},
	}
	for _, s := range steps {
		e.clock.Set(at(s.at))
		e.sweep()
		if got := e.present("items", "a")["a"]; !slices.Equal(got, s.items) {
			t.Fatalf("at +%s items present %v, want %v", s.at, got, s.items)
		}
		if got := e.present("ttl_items", "a")["a"]; !slices.Equal(got, s.ttl) {
			t.Fatalf("at +%s ttl_items present %v, want %v", s.at, got, s.ttl)
		}
	}
	e.mustLive("items", "a", 2)
	if n := len(e.indexEntries(at(0), at(time.Minute))); n != 0 {
		t.Fatalf("%d index entries left after every row was swept, want 0", n)
	}
}

func testTickCadenceMissesNothing(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{Window: time.Second})
	// 300 rows expiring every 33 ms from +1.5 s: many per window, some on
	// window boundaries.
	const n = 300
	exp := func(i int) time.Time { return at(1500*time.Millisecond + time.Duration(i)*33*time.Millisecond) }
	var batch []store.Mutation
	for i := range n {
		batch = append(batch, item("a", int64(i), exp(i)))
	}
	e.write("items", batch...)
	// Irregular ticks, none a multiple of the window, one long gap.
	tick := 1100 * time.Millisecond
	for _, gap := range []time.Duration{700, 700, 1300, 50, 2900, 700, 333, 1, 999, 1001, 700} {
		tick += gap * time.Millisecond
		e.clock.Set(at(tick))
		res := e.sweep()
		now := e.clock.Now()
		var want []int64
		for i := range n {
			if exp(i).After(now) {
				want = append(want, int64(i))
			}
		}
		if got := e.present("items", "a")["a"]; !slices.Equal(got, want) {
			t.Fatalf("after a pass at +%s: %d rows present, want the %d not yet expired", tick, len(got), len(want))
		}
		if wm := e.st.layout.windowOf(now.UnixMilli()); res.Watermark.UnixMilli() != wm {
			t.Fatalf("watermark %s after a pass at %s, want the current window %s", res.Watermark, now, time.UnixMilli(wm).UTC())
		}
	}
}

func testCatchUpAfterDowntime(t *testing.T, f storetest.Factory, cfg suiteConfig) {
	e := newEnv(t, f, cfg.catchUp)
	// Rows expiring all through the downtime, one every downtime/200.
	const n = 200
	step := cfg.downtime / n
	var batch []store.Mutation
	for i := range n {
		batch = append(batch, item("a", int64(i), at(2*time.Second+time.Duration(i)*step)))
	}
	e.write("items", batch...)
	e.clock.Set(at(time.Second))
	e.sweep()
	// The sweeper is down: nothing deletes, and the process restarts.
	e.clock.Set(at(2*time.Second + cfg.downtime))
	if got := e.countPresent("items", "a"); got != n {
		t.Fatalf("%d rows present before the restart, want %d", got, n)
	}
	e.wrap()
	res := e.sweep()
	if got := e.countPresent("items", "a"); got != 0 {
		t.Fatalf("%d rows still present after catching up, want 0", got)
	}
	if res.Deleted != n {
		t.Fatalf("catch-up pass deleted %d rows, want %d", res.Deleted, n)
	}
	wantWindows := int((cfg.downtime + time.Second) / e.st.opts.Window)
	if res.Windows < wantWindows {
		t.Fatalf("catch-up pass completed %d windows, want at least %d", res.Windows, wantWindows)
	}
	t.Logf("caught up %s of downtime: %d windows, %d rows, %s", cfg.downtime, res.Windows, res.Deleted, e.cnt.snapshot())
}

func testExtensionSurvives(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{})
	e.write("items", item("a", 1, at(2*time.Second)), item("a", 2, at(2*time.Second)), item("a", 3, at(2*time.Second)))
	e.clock.Set(at(1500 * time.Millisecond))
	// Row 1's TTL is extended, row 2's removed, row 3 left to expire.
	forever := item("a", 2, time.Time{})
	forever.NoExpiry = true
	e.write("items", item("a", 1, at(10*time.Second)), forever)
	e.clock.Set(at(2 * time.Second))
	res := e.sweep()
	if res.Entries != 3 {
		t.Fatalf("pass processed %d entries, want 3 (two stale, one live)", res.Entries)
	}
	if got := e.present("items", "a")["a"]; !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("present %v after the pass, want the extended rows [1 2]", got)
	}
	e.mustLive("items", "a", 1)
	e.mustLive("items", "a", 2)
	left := e.indexEntries(at(0), at(time.Minute))
	if len(left) != 1 || left[0].due != at(10*time.Second).UnixMilli() {
		t.Fatalf("index holds %+v, want only the extension's entry due at +10s", left)
	}
	e.clock.Set(at(10 * time.Second))
	e.sweep()
	if got := e.present("items", "a")["a"]; !slices.Equal(got, []int64{2}) {
		t.Fatalf("present %v after the extension expired, want [2]", got)
	}
}

// testExtensionRace extends rows while passes run concurrently: a row kept
// alive must never be lost, whatever the interleaving, and rows let go must
// all be deleted.
func testExtensionRace(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{Grace: time.Millisecond, Window: 100 * time.Millisecond, Shards: 4})
	const n = 40
	var batch []store.Mutation
	for i := range n {
		batch = append(batch, item("a", int64(i), at(100*time.Millisecond)))
	}
	e.write("items", batch...)
	for step := 1; step <= 30; step++ {
		now := at(time.Duration(step) * 100 * time.Millisecond)
		e.clock.Set(now)
		var wg sync.WaitGroup
		var sweepErr, writeErr error
		wg.Go(func() { _, sweepErr = e.st.Sweeper().SweepOnce(e.ctx, now) })
		wg.Go(func() {
			// Even rows are kept alive 150 ms at a time, one by one.
			for i := 0; i < n; i += 2 {
				if err := e.st.Write(e.ctx, "items", []store.Mutation{item("a", int64(i), now.Add(150*time.Millisecond))}); err != nil {
					writeErr = err
					return
				}
			}
		})
		wg.Wait()
		if sweepErr != nil || writeErr != nil {
			t.Fatalf("step %d: sweep: %v, write: %v", step, sweepErr, writeErr)
		}
		for i := 0; i < n; i += 2 {
			pk, ck := key("a", int64(i))
			row, err := e.st.Get(e.ctx, "items", pk, ck)
			if err != nil {
				t.Fatalf("step %d: kept row %d lost: %v", step, i, err)
			}
			if string(row.Values[0].([]byte)) != fmt.Sprintf("a/%d", i) || row.Values[1] != "x" {
				t.Fatalf("step %d: kept row %d has values %v", step, i, row.Values)
			}
		}
	}
	var want []int64
	for i := 0; i < n; i += 2 {
		want = append(want, int64(i))
	}
	if got := e.present("items", "a")["a"]; !slices.Equal(got, want) {
		t.Fatalf("present %v, want only the kept rows %v", got, want)
	}
	// Let them go: everything is deleted and the index empties.
	e.clock.Set(at(10 * time.Second))
	e.sweep()
	if got := e.countPresent("items", "a"); got != 0 {
		t.Fatalf("%d rows present after the last extension expired, want 0", got)
	}
	if left := e.indexEntries(at(0), at(10*time.Second)); len(left) != 0 {
		t.Fatalf("%d index entries left, want 0", len(left))
	}
}

// testCrashBetweenIndexAndRow fails the row write after the index write
// succeeded, as a crash would: the entry must not outlive its due time, and
// a retried write must still be swept.
func testCrashBetweenIndexAndRow(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{})
	crash := func(table string, _ []store.Mutation) error {
		if table == "items" {
			return fmt.Errorf("simulated crash: %w", store.ErrUnavailable)
		}
		return nil
	}
	e.cnt.setHook(crash)
	if err := e.st.Write(e.ctx, "items", []store.Mutation{item("a", 1, at(2*time.Second)), item("a", 2, at(2*time.Second))}); err == nil {
		t.Fatal("write succeeded through a crashing backend")
	}
	e.cnt.setHook(nil)
	if n := len(e.indexEntries(at(0), at(time.Minute))); n != 2 {
		t.Fatalf("%d index entries after the crash, want 2 (written before the rows)", n)
	}
	if got := e.countPresent("items", "a"); got != 0 {
		t.Fatalf("%d rows present, want 0", got)
	}
	// The client retries row 2 only; row 1 is never written.
	e.wrap() // a restarted process
	e.write("items", item("a", 2, at(2*time.Second)))
	e.clock.Set(at(2 * time.Second))
	res := e.sweep()
	if res.Entries != 2 {
		t.Fatalf("pass processed %d entries, want 2 (the orphan and the retried row)", res.Entries)
	}
	if got := e.countPresent("items", "a"); got != 0 {
		t.Fatalf("%d rows present after the pass, want 0", got)
	}
	if n := len(e.indexEntries(at(0), at(time.Minute))); n != 0 {
		t.Fatalf("%d index entries left, want 0: no orphan may stay forever", n)
	}
}

// testSlowWriteIsReindexed makes a row write take longer than Grace, with a
// pass running in between: the row must not leak.
func testSlowWriteIsReindexed(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{})
	var fired atomic.Bool
	var sweepErr error
	e.cnt.setHook(func(table string, _ []store.Mutation) error {
		if table == "items" && fired.CompareAndSwap(false, true) {
			// The write stalls 1.5 s; a pass runs meanwhile and finds the
			// entry due (at start+Grace) before the row exists.
			e.clock.Set(at(1500 * time.Millisecond))
			_, sweepErr = e.st.Sweeper().SweepOnce(e.ctx, e.clock.Now())
		}
		return nil
	})
	e.write("items", item("a", 1, at(100*time.Millisecond)))
	e.cnt.setHook(nil)
	if sweepErr != nil {
		t.Fatal(sweepErr)
	}
	if got := e.countPresent("items", "a"); got != 1 {
		t.Fatalf("%d rows present after the slow write, want 1", got)
	}
	left := e.indexEntries(at(0), at(time.Minute))
	if want := at(2500 * time.Millisecond).UnixMilli(); len(left) != 1 || left[0].due != want {
		t.Fatalf("index holds %+v, want one entry due at end of write + Grace (%d)", left, want)
	}
	if got := value(t, e.st.m.reindexed); got != 1 {
		t.Fatalf("reindexed = %v, want 1", got)
	}
	e.clock.Set(at(2500 * time.Millisecond))
	e.sweep()
	if got := e.countPresent("items", "a"); got != 0 {
		t.Fatalf("%d rows present, want 0: the slow write's row leaked", got)
	}
}

func testMassExpiry(t *testing.T, f storetest.Factory, cfg suiteConfig) {
	e := newEnv(t, f, Options{})
	const partitions = 100
	exp := at(3*time.Second + 123*time.Millisecond) // every row in the same millisecond
	batch := make([]store.Mutation, 0, 1000)
	for i := range cfg.massRows {
		batch = append(batch, item(fmt.Sprintf("p%02d", i%partitions), int64(i), exp))
		if len(batch) == cap(batch) || i == cfg.massRows-1 {
			e.write("items", batch...)
			batch = batch[:0]
		}
	}
	parts := make([]string, partitions)
	for i := range parts {
		parts[i] = fmt.Sprintf("p%02d", i)
	}
	e.clock.Set(exp.Add(-time.Millisecond))
	if res := e.sweep(); res.Deleted != 0 {
		t.Fatalf("pass before the expiry deleted %d rows", res.Deleted)
	}
	before := e.cnt.snapshot()
	e.clock.Set(exp)
	t0 := time.Now()
	res := e.sweep()
	took := time.Since(t0)
	ops := e.cnt.snapshot().sub(before)
	if res.Deleted != cfg.massRows {
		t.Fatalf("pass deleted %d rows, want %d", res.Deleted, cfg.massRows)
	}
	if got := e.countPresent("items", parts...); got != 0 {
		t.Fatalf("%d rows present after the pass, want 0", got)
	}
	if n := len(e.indexEntries(exp, exp)); n != 0 {
		t.Fatalf("%d index entries left, want 0", n)
	}
	t.Logf("%d rows expiring in one millisecond deleted in %s by %s: %.3f calls per row",
		cfg.massRows, took.Round(time.Millisecond), ops, float64(ops.calls())/float64(cfg.massRows))
}

func testRetriesThrottling(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{BatchSize: 10})
	sw := e.st.Sweeper()
	sw.retryBase, sw.retryMax = time.Millisecond, 4*time.Millisecond
	var batch []store.Mutation
	for i := range 50 {
		batch = append(batch, item("a", int64(i), at(2*time.Second)))
	}
	e.write("items", batch...)

	// Transient throttling: every delete batch is refused the first time
	// it is sent. Batches are told apart by their first row, not by the
	// order of calls, which concurrent batches interleave.
	var mu sync.Mutex
	calls, refused := 0, 0
	seen := map[string]bool{}
	e.cnt.setHook(func(table string, b []store.Mutation) error {
		if table != "items" || len(b) == 0 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if k := fmt.Sprint(b[0].Partition, b[0].Clustering); !seen[k] {
			seen[k] = true
			refused++
			return fmt.Errorf("simulated: %w", store.ErrThrottled)
		}
		return nil
	})
	e.clock.Set(at(2 * time.Second))
	res := e.sweep()
	if res.Deleted != 50 {
		t.Fatalf("deleted %d, want 50", res.Deleted)
	}
	// Each batch (per index partition, at most 10 rows) was refused once
	// and retried once.
	if got := value(t, e.st.m.retries); got != float64(refused) || refused < 5 || calls != 2*refused {
		t.Fatalf("retries = %v after %d delete calls, %d refused: want one per batch", got, calls, refused)
	}

	// A backend down for longer than the retries: the pass fails, the
	// watermark stays before the failed window, and a later pass catches up.
	e.cnt.setHook(nil)
	e.write("items", item("b", 1, at(3*time.Second)))
	e.cnt.setHook(func(table string, _ []store.Mutation) error {
		if table == "items" {
			return fmt.Errorf("simulated: %w", store.ErrUnavailable)
		}
		return nil
	})
	e.clock.Set(at(5 * time.Second))
	res, err := sw.SweepOnce(e.ctx, e.clock.Now())
	if !isErr(err, store.ErrUnavailable) {
		t.Fatalf("pass over a down backend: %v, want ErrUnavailable", err)
	}
	if wm := res.Watermark; wm.After(at(3 * time.Second)) {
		t.Fatalf("watermark advanced to %s past the failed window", wm)
	}
	e.cnt.setHook(nil)
	e.clock.Set(at(6 * time.Second))
	e.sweep()
	if got := e.countPresent("items", "a", "b"); got != 0 {
		t.Fatalf("%d rows present after recovery, want 0", got)
	}
}

func testDroppedTable(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{})
	gone := itemsSpec
	gone.Name = "gone"
	if err := e.st.CreateTable(e.ctx, gone); err != nil {
		t.Fatal(err)
	}
	e.write("gone", item("a", 1, at(2*time.Second)), item("a", 2, at(2*time.Second)))
	e.write("items", item("a", 1, at(2*time.Second)))
	if err := e.st.DropTable(e.ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(at(2 * time.Second))
	res := e.sweep()
	if res.Dropped != 2 || res.Deleted != 1 {
		t.Fatalf("pass dropped %d and deleted %d, want 2 and 1", res.Dropped, res.Deleted)
	}
	if n := len(e.indexEntries(at(0), at(time.Minute))); n != 0 {
		t.Fatalf("%d index entries left, want 0", n)
	}
	if err := e.st.DropTable(e.ctx, IndexTable); !isErr(err, store.ErrInvalid) {
		t.Fatalf("DropTable(%s) = %v, want ErrInvalid", IndexTable, err)
	}
}

func testBadInputWritesNothing(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{})
	bad := item("a", 2, at(2*time.Second))
	bad.Cells[0].Value = "not bytes"
	err := e.st.Write(e.ctx, "items", []store.Mutation{item("a", 1, at(2*time.Second)), bad})
	var me *store.MutationError
	if !isErr(err, store.ErrInvalid) || !asMutationError(err, &me) || me.Index != 1 {
		t.Fatalf("bad batch: %v, want a *MutationError for index 1 wrapping ErrInvalid", err)
	}
	if err := e.st.Write(e.ctx, "nope", []store.Mutation{item("a", 1, at(2*time.Second))}); !isErr(err, store.ErrTableNotFound) {
		t.Fatalf("write to a missing table: %v, want ErrTableNotFound", err)
	}
	if n := len(e.indexEntries(at(0), at(time.Minute))); n != 0 {
		t.Fatalf("%d index entries after refused writes, want 0", n)
	}
	if got := e.countPresent("items", "a"); got != 0 {
		t.Fatalf("%d rows after refused writes, want 0", got)
	}
	if err := (Options{Shards: -1}).Validate(); !isErr(err, store.ErrInvalid) {
		t.Fatalf("Validate(Shards: -1) = %v, want ErrInvalid", err)
	}
	if _, err := Wrap(e.ctx, e.raw, Options{Window: 1500 * time.Microsecond}); !isErr(err, store.ErrInvalid) {
		t.Fatalf("Wrap with a sub-millisecond window: %v, want ErrInvalid", err)
	}
}

func testUnindexedWrites(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{Exclude: func(table string) bool { return table == "shard_1" }})
	shard := itemsSpec
	shard.Name = "shard_1"
	if err := e.st.CreateTable(e.ctx, shard); err != nil {
		t.Fatal(err)
	}
	forever := item("a", 2, time.Time{})
	forever.NoExpiry = true
	before := e.cnt.snapshot()
	e.write("shard_1", item("a", 1, at(2*time.Second)))
	e.write("items", forever)
	if err := (store.Meta{S: e.st}).Put(e.ctx, "test", "k", []byte("doc")); err != nil {
		t.Fatal(err)
	}
	ops := e.cnt.snapshot().sub(before)
	if ops.writes != 3 || ops.lookups != 0 || ops.indexMuts != 0 {
		t.Fatalf("writes that cannot expire or go to excluded tables cost %s, %d index mutations; want 3 plain writes", ops, ops.indexMuts)
	}
	// Without an expiry of its own a row may still get the table default:
	// the spec is read (once), but nothing is indexed.
	e.write("items", item("a", 1, time.Time{}), item("a", 3, time.Time{}))
	e.write("items", item("a", 4, time.Time{}))
	if ops := e.cnt.snapshot().sub(before); ops.lookups != 1 || ops.indexMuts != 0 {
		t.Fatalf("rows without expiry cost %s, %d index mutations; want one spec lookup and none", ops, ops.indexMuts)
	}
}

func testLayoutConflict(t *testing.T, f storetest.Factory, _ suiteConfig) {
	e := newEnv(t, f, Options{})
	if _, err := Wrap(e.ctx, e.raw, Options{Shards: 8}); !isErr(err, store.ErrConflict) || !isErr(err, ErrLayout) {
		t.Fatalf("Wrap with other shards: %v, want ErrLayout (ErrConflict)", err)
	}
	if _, err := Wrap(e.ctx, e.raw, Options{Window: 2 * time.Second}); !isErr(err, ErrLayout) {
		t.Fatalf("Wrap with another window: %v, want ErrLayout", err)
	}
}

func testMetrics(t *testing.T, f storetest.Factory, _ suiteConfig) {
	reg := prometheus.NewPedanticRegistry()
	e := newEnv(t, f, Options{Registerer: reg})
	e.write("items", item("a", 1, at(2*time.Second)), item("a", 2, at(2*time.Second)))
	e.clock.Set(at(3 * time.Second))
	e.sweep()
	if got := value(t, e.st.m.deleted); got != 2 {
		t.Fatalf("ebb_expiry_deleted_total = %v, want 2", got)
	}
	if got := value(t, e.st.m.indexed); got != 2 {
		t.Fatalf("ebb_expiry_indexed_total = %v, want 2", got)
	}
	if got := value(t, e.st.m.wmLag); got < 0 || got > 1 {
		t.Fatalf("ebb_expiry_watermark_lag_seconds = %v, want within one window", got)
	}
	got := families(t, reg)
	for _, name := range []string{"ebb_expiry_deleted_total", "ebb_expiry_lag_seconds", "ebb_expiry_watermark_lag_seconds"} {
		if !slices.Contains(got, name) {
			t.Fatalf("%s not gathered; got %v", name, got)
		}
	}
	if got := histogramCount(t, reg, "ebb_expiry_lag_seconds"); got != 2 {
		t.Fatalf("lag histogram count %d, want 2", got)
	}
	// A second decorator on the same registry shares the collectors.
	if _, err := Wrap(e.ctx, e.raw, Options{Registerer: reg}); err != nil {
		t.Fatalf("second Wrap on one registry: %v", err)
	}
}

package expiry

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The DynamoDB client keeps idle keep-alive connections open.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}

// TestPebble runs in parallel, so that its CPU overlaps the remote
// variants' waits on their servers instead of coming before them.
func TestPebble(t *testing.T) {
	t.Parallel()
	// Under the race detector Pebble's invariant checks make every
	// conditional delete capture a stack trace; 100,000 rows would take
	// minutes there (20,000 took 75 s on a loaded 2-core machine), so runs
	// with -race check 5,000: still five of Pebble's 1,000-delete batches
	// in one pass, across 100 partitions, more than the remote backends'
	// 2,000. make check runs the full 100,000 once more without the race
	// detector.
	mass := 100_000
	if raceEnabled {
		mass = 5_000
	}
	runSuite(t, testbackend.Pebble, suiteConfig{
		massRows: mass,
		downtime: time.Hour,
		// An hour is 3600 windows; 4 shards keep the catch-up pass at
		// 14,400 partition reads.
		catchUp: Options{Shards: 4},
	})
}

// stats returns the rows physically stored in a table.
func stats(t testing.TB, s store.Store, table string) int64 {
	t.Helper()
	st, err := s.Stats(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Exact {
		t.Fatalf("Stats(%s) is an estimate on the embedded backend", table)
	}
	return st.Rows
}

// TestLoopCatchesUpAfterDowntime runs the real loop on a fake clock, with a
// tick cadence that is not a multiple of the window: while it runs, every
// row is physically gone at the first tick at or after its expiry; after an
// hour down, the restarted loop catches up at once. It runs in parallel,
// as the other long tests on the embedded backend do, so that its CPU
// fills the remote variants' waits on their servers.
func TestLoopCatchesUpAfterDowntime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		raw := testbackend.Pebble(t, nil)
		opts := Options{Window: time.Second, Shards: 4, SweepInterval: 700 * time.Millisecond}
		st, err := Wrap(ctx, raw, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateTable(ctx, itemsSpec); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		// One row every 5 s for two hours, at odd milliseconds.
		const n = 1440
		exp := func(i int) time.Time {
			return t0.Add(3*time.Second + time.Duration(i)*5*time.Second + 7*time.Millisecond)
		}
		var batch []store.Mutation
		for i := range n {
			batch = append(batch, item("a", int64(i), exp(i)))
		}
		if err := st.Write(ctx, "items", batch); err != nil {
			t.Fatal(err)
		}
		liveAt := func(t time.Time) int64 {
			c := int64(0)
			for i := range n {
				if exp(i).After(t) {
					c++
				}
			}
			return c
		}

		stopSweeper := startSweeper(t, st)
		time.Sleep(10*time.Minute + 350*time.Millisecond)
		synctest.Wait()
		lastTick := t0.Add(time.Since(t0).Truncate(opts.SweepInterval))
		if got, want := stats(t, raw, "items"), liveAt(lastTick); got != want {
			t.Fatalf("after 10 min of ticks: %d rows stored, want %d (those expiring after the last tick)", got, want)
		}

		// Down for an hour: nothing is deleted meanwhile.
		stopSweeper()
		down := time.Now()
		time.Sleep(time.Hour)
		if got, want := stats(t, raw, "items"), liveAt(lastTick); got != want {
			t.Fatalf("while down: %d rows stored, want %d", got, want)
		}

		// A restarted process catches up in its first pass.
		st2, err := Wrap(ctx, raw, opts)
		if err != nil {
			t.Fatal(err)
		}
		startSweeper(t, st2)
		synctest.Wait()
		if got, want := stats(t, raw, "items"), liveAt(time.Now()); got != want {
			t.Fatalf("after restarting %s later: %d rows stored, want %d", time.Since(down), got, want)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := stats(t, raw, "items"); got != 0 {
			t.Fatalf("after every expiry: %d rows stored, want 0", got)
		}
	})
}

// TestRowsLeaveStatsWithinTwoIntervals is the end-to-end check of the
// issue: rows written with a 2 s TTL disappear from the physical row count
// within two sweep intervals of expiring.
func TestRowsLeaveStatsWithinTwoIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		raw := testbackend.Pebble(t, nil)
		const interval = time.Second
		st, err := Wrap(ctx, raw, Options{SweepInterval: interval})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateTable(ctx, itemsSpec); err != nil {
			t.Fatal(err)
		}
		startSweeper(t, st)
		time.Sleep(1234 * time.Millisecond)
		exp := time.Now().Add(2 * time.Second)
		var batch []store.Mutation
		for i := range 500 {
			batch = append(batch, item("a", int64(i), exp))
		}
		if err := st.Write(ctx, "items", batch); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(exp) - time.Millisecond)
		synctest.Wait()
		if got := stats(t, raw, "items"); got != 500 {
			t.Fatalf("1 ms before expiring: %d rows stored, want 500", got)
		}
		time.Sleep(time.Until(exp.Add(2 * interval)))
		synctest.Wait()
		if got := stats(t, raw, "items"); got != 0 {
			t.Fatalf("two intervals after expiring: %d rows stored, want 0", got)
		}
	})
}

// TestPacing checks that MaxDeletesPerSecond spaces a mass expiry out.
func TestPacing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		raw := testbackend.Pebble(t, nil)
		st, err := Wrap(ctx, raw, Options{MaxDeletesPerSecond: 500, BatchSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateTable(ctx, itemsSpec); err != nil {
			t.Fatal(err)
		}
		exp := time.Now().Add(2 * time.Second)
		var batch []store.Mutation
		for i := range 2000 {
			batch = append(batch, item("a", int64(i), exp))
		}
		if err := st.Write(ctx, "items", batch); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(exp))
		began := time.Now()
		res, err := st.Sweeper().SweepOnce(ctx, began)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(began)
		// At 500/s the first batch goes at once and the last one when the
		// 2000 - (its size, at most 100) before it have had their time.
		if res.Deleted != 2000 || took < 3700*time.Millisecond || took > 4*time.Second {
			t.Fatalf("deleted %d in %s, want 2000 in 3.7 to 4 s", res.Deleted, took)
		}
	})
}

// TestCrashBetweenIndexAndRowPebble crashes the embedded backend for real
// (a crash clone holding only what was synced) after the index write and
// before the row write, then restarts on the clone.
func TestCrashBetweenIndexAndRowPebble(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	clock := storetest.NewClock(start)
	raw, err := ebbpebble.Open("db", ebbpebble.Options{FS: fs, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	cnt := newCounting(raw)
	st, err := Wrap(ctx, cnt, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTable(ctx, itemsSpec); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, "items", []store.Mutation{item("a", 1, at(2*time.Second))}); err != nil {
		t.Fatal(err)
	}
	var crashed *vfs.MemFS
	errCrash := errors.New("crashed")
	cnt.setHook(func(table string, _ []store.Mutation) error {
		if table == "items" {
			crashed = fs.CrashClone(vfs.CrashCloneCfg{})
			return errCrash
		}
		return nil
	})
	if err := st.Write(ctx, "items", []store.Mutation{item("a", 2, at(2*time.Second))}); !errors.Is(err, errCrash) {
		t.Fatalf("write through the crash: %v", err)
	}

	raw2, err := ebbpebble.Open("db", ebbpebble.Options{FS: crashed, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer raw2.Close()
	st2, err := Wrap(ctx, raw2, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if got := stats(t, raw2, "items"); got != 1 {
		t.Fatalf("%d rows after the crash, want 1 (row 2 never landed)", got)
	}
	if got := entriesStored(t, raw2); got != 2 {
		t.Fatalf("%d index entries after the crash, want 2 (row 2's was written first)", got)
	}
	clock.Set(at(2 * time.Second))
	res, err := st2.Sweeper().SweepOnce(ctx, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries != 2 || stats(t, raw2, "items") != 0 || entriesStored(t, raw2) != 0 {
		t.Fatalf("after the pass: %+v, %d rows, %d entries; want both entries processed, nothing left",
			res, stats(t, raw2, "items"), entriesStored(t, raw2))
	}
}

// entriesStored is how many index entries s holds: the rows of IndexTable
// but its due markers.
func entriesStored(t testing.TB, s store.Store) int64 {
	t.Helper()
	page, err := kit.Query(context.Background(), s, IndexTable, store.Query{Partition: markPartition, Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return stats(t, s, IndexTable) - int64(len(page.Rows))
}

// TestLoopBacksOffAndRecovers fails every delete with an error retrying
// cannot fix: the loop backs off exponentially instead of hammering the
// backend, and deletes everything once the backend recovers.
func TestLoopBacksOffAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		raw := testbackend.Pebble(t, nil)
		cnt := newCounting(raw)
		st, err := Wrap(ctx, cnt, Options{SweepInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateTable(ctx, itemsSpec); err != nil {
			t.Fatal(err)
		}
		if err := st.Write(ctx, "items", []store.Mutation{item("a", 1, time.Now().Add(1500*time.Millisecond))}); err != nil {
			t.Fatal(err)
		}
		var attempts atomic.Int64
		cnt.setHook(func(table string, _ []store.Mutation) error {
			if table == "items" {
				attempts.Add(1)
				return errors.New("disk on fire")
			}
			return nil
		})
		startSweeper(t, st)
		time.Sleep(17 * time.Second)
		synctest.Wait()
		// First failure at 2 s, then retries after 2, 4 and 8 s: 2, 4, 8, 16.
		if n := attempts.Load(); n != 4 {
			t.Fatalf("%d delete attempts in 17 s, want 4 (exponential backoff from the interval)", n)
		}
		if got := value(t, st.m.sweeps.WithLabelValues("error")); got != 4 {
			t.Fatalf("ebb_expiry_sweeps_total{result=error} = %v, want 4", got)
		}
		cnt.setHook(nil)
		time.Sleep(40 * time.Second)
		synctest.Wait()
		if got := stats(t, raw, "items"); got != 0 {
			t.Fatalf("%d rows stored after the backend recovered, want 0", got)
		}
	})
}

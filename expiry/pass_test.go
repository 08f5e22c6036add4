package expiry

import (
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// TestBusyPassComesSooner: while rows keep falling due in the current
// window, a pass that found some is followed by the next once about a
// delete batch more is due at the rate it found them, never sooner than
// SweepInterval/10; a pass that found none waits SweepInterval.
func TestBusyPassComesSooner(t *testing.T) {
	e := newEnv(t, testbackend.Pebble, Options{BatchSize: 10})
	interval := e.st.opts.SweepInterval
	// 80 rows due 10 ms apart from the start of the window [2 s, 3 s)
	// after the epoch (start is 250 ms past it).
	var batch []store.Mutation
	for i := range 80 {
		batch = append(batch, item(fmt.Sprintf("p%d", i%5), int64(i), at(1750*time.Millisecond+time.Duration(i)*10*time.Millisecond)))
	}
	e.write("items", batch...)
	sw := e.st.Sweeper()
	pass := func(d time.Duration, wantDeleted int) time.Duration {
		t.Helper()
		e.clock.Set(at(d))
		if res := e.sweep(); res.Deleted != wantDeleted {
			t.Fatalf("the pass at +%s deleted %d rows, want %d", d, res.Deleted, wantDeleted)
		}
		return sw.Next()
	}
	// The first pass covers an interval and finds 41 rows due: a batch of
	// 10 falls due in a quarter of it.
	if next, want := pass(2150*time.Millisecond, 41), interval*10/41; next != want {
		t.Fatalf("Next after 41 rows found in an interval: %s, want %s", next, want)
	}
	// 20 more in 200 ms: a batch every 100 ms, the shortest wait.
	if next := pass(2350*time.Millisecond, 20); next != interval/busyDivisor {
		t.Fatalf("Next after 20 rows found in 200 ms: %s, want %s", next, interval/busyDivisor)
	}
	// Nothing more due at the same instant: the interval again.
	if next := pass(2350*time.Millisecond, 0); next != interval {
		t.Fatalf("Next after a pass that found nothing: %s, want %s", next, interval)
	}
	// The rest of the window, then nothing marked: idle.
	if next := pass(3*time.Second, 19); next != e.st.opts.IdleInterval {
		t.Fatalf("Next once every row is swept: %s, want the idle interval %s", next, e.st.opts.IdleInterval)
	}
	if got := e.countPresent("items", "p0", "p1", "p2", "p3", "p4"); got != 0 {
		t.Fatalf("%d rows left after every row fell due and was swept", got)
	}
}

// TestParallelismDefault: the sweep keeps 4 batches in flight by default,
// 16 on the CQL backend, whose deletes wait on round trips; a Parallelism
// given is kept on any backend.
func TestParallelismDefault(t *testing.T) {
	for _, c := range []struct {
		caps store.Capabilities
		opts Options
		want int
	}{
		{store.Capabilities{Backend: "pebble", DeleteBatch: 1000}, Options{}, 4},
		{store.Capabilities{Backend: "dynamodb", DeleteBatch: 25}, Options{}, 4},
		{store.Capabilities{Backend: "cql", DeleteBatch: 64}, Options{}, 16},
		{store.Capabilities{Backend: "cql", DeleteBatch: 64}, Options{Parallelism: 2}, 2},
	} {
		o := c.opts.withDefaults(c.caps)
		if o.Parallelism != c.want || o.BatchSize != c.caps.DeleteBatch {
			t.Errorf("%s backend, %d given: parallelism %d, batch %d; want %d, %d",
				c.caps.Backend, c.opts.Parallelism, o.Parallelism, o.BatchSize, c.want, c.caps.DeleteBatch)
		}
	}
}

package shardmgr

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/storetest"
)

// scaleBuckets are the table buckets of the indexes of a scale run, from
// an hour to a week; index i has scaleBuckets[i%4].
var scaleBuckets = []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// scaleConfigs returns n indexes that keep about shards shards each.
func scaleConfigs(n, shards int) []Config {
	cfgs := make([]Config, n)
	for i := range cfgs {
		tb := scaleBuckets[i%len(scaleBuckets)]
		cfgs[i] = Config{Index: fmt.Sprintf("ix%04d", i), TableBucket: tb, Retention: time.Duration(shards-3) * tb, Runway: 1, Schema: testSchema}
	}
	return cfgs
}

// scaleRun is what one scale run measured.
type scaleRun struct {
	indexes, shards int           // shards: tables that exist after the first pass
	create          time.Duration // the first pass, which creates every shard
	idle            time.Duration // a pass with nothing to do
	idleCalls       map[string]int
	change          time.Duration // a pass an hour later: the hourly indexes create and drop one shard each
	changeCalls     map[string]int
	changes         int // creates and drops that pass applied
	heap            uint64
}

func sum(calls map[string]int) int {
	t := 0
	for _, n := range calls {
		t += n
	}
	return t
}

// runScale builds n indexes of shards shards on the embedded backend in
// memory, under a fake clock, and measures the manager's passes with every
// store call counted.
func runScale(t testing.TB, n, shards int) scaleRun {
	t.Helper()
	ctx := context.Background()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	clock := storetest.NewClock(time.Date(2026, 3, 4, 12, 30, 0, 0, time.UTC))
	cs := storetest.NewCalls(testbackend.Pebble(t, clock.Now))
	cfgs := scaleConfigs(n, shards)
	m, _ := newManager(t, cs, clock.Now, cfgs...)
	r := scaleRun{indexes: n}

	begin := time.Now()
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	r.create = time.Since(begin)
	infos, err := cs.Tables(ctx, "ix")
	if err != nil {
		t.Fatal(err)
	}
	r.shards = len(infos)

	// A second pass right after the first may still record what the first
	// did; the idle pass measured is the one after that.
	clock.Advance(time.Second)
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	cs.Reset()
	begin = time.Now()
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	r.idle = time.Since(begin)
	r.idleCalls = cs.Reset()

	clock.Advance(time.Hour)
	begin = time.Now()
	if err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	r.change = time.Since(begin)
	r.changeCalls = cs.Reset()
	r.changes = r.changeCalls["CreateTable"] + r.changeCalls["DropTable"]

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		r.heap = after.HeapAlloc - before.HeapAlloc
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(cs)
	return r
}

// BenchmarkControlPlane measures the shard manager over many indexes: the
// first pass (every shard created), a pass with nothing to do, a pass that
// creates and drops one shard of each hourly index, the store calls of
// each, and the heap the store and manager hold. docs/performance.md ("How
// the control plane grows") reports it; run it with -benchtime=1x.
func BenchmarkControlPlane(b *testing.B) {
	for _, c := range []struct{ indexes, shards int }{{100, 50}, {2000, 50}, {100, 1000}} {
		b.Run(fmt.Sprintf("indexes=%d/shards=%d", c.indexes, c.shards), func(b *testing.B) {
			for range b.N {
				r := runScale(b, c.indexes, c.shards)
				b.ReportMetric(float64(r.shards), "tables")
				b.ReportMetric(r.create.Seconds(), "create-s")
				b.ReportMetric(float64(r.idle.Microseconds())/1e3, "idle-ms")
				b.ReportMetric(float64(sum(r.idleCalls)), "idle-calls")
				b.ReportMetric(float64(r.change.Microseconds())/1e3, "change-ms")
				b.ReportMetric(float64(sum(r.changeCalls)), "change-calls")
				b.ReportMetric(float64(r.changes), "changes")
				b.ReportMetric(float64(r.heap)/(1<<20), "heap-MiB")
				b.Logf("idle calls %v; change calls %v", r.idleCalls, r.changeCalls)
			}
		})
	}
}

// TestPassCallsGrowWithChangesNotIndexes: a pass with nothing to do makes
// the same store calls over 20 indexes as over 400 (one listing of the
// tables, one of the manager's records, one write of the pass record),
// and a pass that creates and drops shards adds at most two calls per
// shard it creates or drops (the call itself and its index's record).
func TestPassCallsGrowWithChangesNotIndexes(t *testing.T) {
	small := runScale(t, 20, 10)
	large := runScale(t, 400, 10)
	if sum(small.idleCalls) != sum(large.idleCalls) || sum(large.idleCalls) > 4 {
		t.Errorf("idle pass: %v over 20 indexes, %v over 400; want the same few calls", small.idleCalls, large.idleCalls)
	}
	for _, r := range []scaleRun{small, large} {
		if r.changes != r.indexes/2 { // the hourly quarter creates one shard and drops one
			t.Errorf("%d indexes: %d creates and drops, want %d", r.indexes, r.changes, r.indexes/2)
		}
		if got, bound := sum(r.changeCalls), sum(r.idleCalls)+2*r.changes; got > bound {
			t.Errorf("%d indexes: a pass with %d changes made %d calls (%v), want at most %d", r.indexes, r.changes, got, r.changeCalls, bound)
		}
	}
}

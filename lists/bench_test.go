package lists_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/keyenc"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// The benchmarks run on the embedded backend on disk, with every write
// synced (the default), beside a baseline doing the same key reads or
// writes straight on the *pebble.DB underneath, so that one run measures
// the ratio. Item values are 16 bytes, the size of a story ID.

const (
	benchEntity  = "user-000042"
	benchList    = 1000 // items in the list BenchmarkGet reads
	benchGet     = 100  // items per Get
	benchAddSize = 10   // items per Add
	// benchWriters is how many goroutines per CPU add at once in the
	// parallel variants: synced commits from concurrent writers share one
	// fsync (Pebble's group commit), which is how a server under load
	// writes.
	benchWriters = 64
)

func benchValue(i int) []byte { return fmt.Appendf(nil, "story-%010d", i) }

type benchEnv struct {
	st  *ebbpebble.Store
	svc *lists.Service
	f   lists.Feature
	now time.Time
}

func newBenchEnv(b *testing.B) *benchEnv { return newBenchEnvOn(b, false) }

// newBenchEnvOn opens the benchmark store; withExpiry puts the Service on
// the expiry decorator, as ebb serve does.
func newBenchEnvOn(b *testing.B, withExpiry bool) *benchEnv {
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	st, err := ebbpebble.Open(b.TempDir(), ebbpebble.Options{Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	var on store.Store = st
	if withExpiry {
		wrapped, err := expiry.Wrap(context.Background(), st, expiry.Options{Now: clock})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = wrapped.Close() })
		on = wrapped
	}
	svc, err := lists.New(context.Background(), on, lists.Options{Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	f, _, err := svc.CreateFeature(context.Background(), feat, 30*day)
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{st: st, svc: svc, f: f, now: now}
}

// fill adds benchList items to the benchmark list.
func (e *benchEnv) fill(b *testing.B) {
	items := make([]lists.Item, benchList)
	for i := range items {
		items[i] = lists.Item{Value: benchValue(i), Timestamp: e.now.Add(-time.Duration(i) * time.Second)}
	}
	if _, err := e.svc.Add(context.Background(), feat, benchEntity, items); err != nil {
		b.Fatal(err)
	}
}

// listPrefix finds, by scanning the database, the key prefix of the
// benchmark list's rows (table ID | partition | row space) and one stored
// row value.
func (e *benchEnv) listPrefix(b *testing.B) (prefix, value []byte) {
	tail := append(keyenc.AppendString(nil, benchEntity, false), 0x01)
	it, err := e.st.DB().NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) > 8+len(tail) && bytes.Equal(k[8:8+len(tail)], tail) {
			return bytes.Clone(k[:8+len(tail)]), bytes.Clone(it.Value())
		}
	}
	b.Fatal("benchmark list not found in the database")
	return nil, nil
}

// reportRead reports, over what runs until the returned function is
// called, the block cache's misses and hits per operation (a read of a hot
// list should find every block in the cache, whatever the list's size) and
// the process's CPU time per operation, which drifts less than the time
// per operation when other work shares the machine.
func reportRead(b *testing.B, db *pebble.DB) func() {
	before, cpu := db.Metrics().BlockCache, cpuTime()
	return func() {
		cpu = cpuTime() - cpu
		after := db.Metrics().BlockCache
		b.ReportMetric(float64(after.Misses-before.Misses)/float64(b.N), "cache-misses/op")
		b.ReportMetric(float64(after.Hits-before.Hits)/float64(b.N), "cache-hits/op")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportItems(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkGet reads the newest 100 items of a 1000-item list.
func BenchmarkGet(b *testing.B) { benchRead(b, false) }

// BenchmarkGetWithExpiry is BenchmarkGet through the expiry decorator, as
// ebb serve reads: the decorator hands Scan through to the backend, so
// it should cost nothing.
func BenchmarkGetWithExpiry(b *testing.B) { benchRead(b, true) }

func benchRead(b *testing.B, withExpiry bool) {
	e := newBenchEnvOn(b, withExpiry)
	e.fill(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		items, err := e.svc.Get(ctx, feat, benchEntity, time.Time{}, benchGet)
		if err != nil || len(items) != benchGet {
			b.Fatalf("get: %d items, %v", len(items), err)
		}
	}
	reportItems(b, benchGet)
}

// BenchmarkGetRawPebble reads the same 100 keys as BenchmarkGet straight
// from Pebble: one bounded iterator over the list's rows, copying each key
// and value out, as any caller keeping the results must.
func BenchmarkGetRawPebble(b *testing.B) {
	e := newBenchEnv(b)
	e.fill(b)
	prefix, _ := e.listPrefix(b)
	rawRead(b, e.st.DB(), prefix)
}

// rawRead reads the first benchGet rows under prefix straight from Pebble,
// b.N times.
func rawRead(b *testing.B, db *pebble.DB, prefix []byte) {
	opts := &pebble.IterOptions{LowerBound: prefix, UpperBound: keyenc.PrefixEnd(prefix)}
	b.ReportAllocs()
	defer reportRead(b, db)()
	for b.Loop() {
		it, err := db.NewIter(opts)
		if err != nil {
			b.Fatal(err)
		}
		keys, values := make([][]byte, 0, benchGet), make([][]byte, 0, benchGet)
		for ok := it.First(); ok && len(keys) < benchGet; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				b.Fatal(err)
			}
			keys = append(keys, bytes.Clone(it.Key()))
			values = append(values, bytes.Clone(v))
		}
		if err := it.Close(); err != nil || len(keys) != benchGet || len(values) != benchGet {
			b.Fatalf("raw read: %d keys, %v", len(keys), err)
		}
	}
	reportItems(b, benchGet)
}

// BenchmarkAdd adds 10 new items per call, each call synced: one caller at
// a time (serial), and benchWriters callers per CPU at once (parallel).
func BenchmarkAdd(b *testing.B) { benchAdd(b, false) }

// BenchmarkAddWithExpiry is BenchmarkAdd through the expiry decorator, as
// ebb serve runs it: the decorator writes its index entries (synced) before
// the items.
func BenchmarkAddWithExpiry(b *testing.B) { benchAdd(b, true) }

func benchAdd(b *testing.B, withExpiry bool) {
	for _, parallel := range []bool{false, true} {
		b.Run(mode(parallel), func(b *testing.B) {
			e := newBenchEnvOn(b, withExpiry)
			var seq atomic.Int64
			add := func() error {
				n := int(seq.Add(1))
				items := make([]lists.Item, benchAddSize)
				for i := range items {
					k := n*benchAddSize + i
					items[i] = lists.Item{Value: benchValue(k), Timestamp: e.now.Add(-time.Duration(k) * time.Millisecond)}
				}
				_, err := e.svc.Add(context.Background(), feat, benchEntity, items)
				return err
			}
			run(b, parallel, add)
			reportItems(b, benchAddSize)
		})
	}
}

// BenchmarkAddRawPebble writes what BenchmarkAdd writes, straight to
// Pebble: per call one synced batch of 10 row keys, each with a value of
// the size the store writes, and their 10 value-index entries.
func BenchmarkAddRawPebble(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(mode(parallel), func(b *testing.B) {
			e := newBenchEnv(b)
			if _, err := e.svc.Add(context.Background(), feat, benchEntity, []lists.Item{{Value: benchValue(0), Timestamp: e.now}}); err != nil {
				b.Fatal(err)
			}
			rowPrefix, stored := e.listPrefix(b)
			// The index space of the same partition: the row space byte
			// (0x01) replaced by the index space (0x02) and index number 0.
			ixPrefix := append(bytes.Clone(rowPrefix[:len(rowPrefix)-1]), 0x02, 0)
			db := e.st.DB()
			var seq atomic.Int64
			add := func() error {
				n := int(seq.Add(1))
				batch := db.NewBatch()
				defer batch.Close()
				for i := range benchAddSize {
					k := n*benchAddSize + i
					v := benchValue(k)
					ik := lists.ItemKey(e.now.Add(-time.Duration(k)*time.Millisecond), v)
					ck := keyenc.AppendString(nil, ik, true)
					val := append(bytes.Clone(stored[:len(stored)-len(v)]), v...)
					_ = batch.Set(append(bytes.Clone(rowPrefix), ck...), val, nil)
					ix := keyenc.AppendBytes(bytes.Clone(ixPrefix), v, false)
					_ = batch.Set(append(ix, ck...), nil, nil)
				}
				return batch.Commit(pebble.Sync)
			}
			run(b, parallel, add)
			reportItems(b, benchAddSize)
		})
	}
}

func mode(parallel bool) string {
	if parallel {
		return fmt.Sprintf("parallel-%d", benchWriters)
	}
	return "serial"
}

// run runs op b.N times, from one goroutine or from benchWriters per CPU.
func run(b *testing.B, parallel bool, op func() error) {
	b.ReportAllocs()
	if !parallel {
		for b.Loop() {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(benchWriters)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err) // Fatal is for the benchmark's own goroutine
				return
			}
		}
	})
}

// BenchmarkGetListSize reads the newest 100 items of lists of 1,000,
// 100,000 and 1,000,000 items through the expiry decorator, as ebb serve
// reads, each beside the same read straight from Pebble (raw-pebble): a
// read seeks to the newest items and stops after 100, so its cost should
// not grow with the list. Each list is read once flushed to sstables
// (flushed: as written, spread over the LSM's levels as they came) and
// again after a full compaction (compacted: the settled shape of a list
// that old).
//
//	go test -run '^$' -bench GetListSize -benchtime 2s ./lists/
func BenchmarkGetListSize(b *testing.B) {
	for _, size := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("items-%d", size), func(b *testing.B) {
			e := newBenchEnvOn(b, true)
			e.fillN(b, size)
			db := e.st.DB()
			prefix, _ := e.listPrefix(b)
			for _, state := range []string{"flushed", "compacted"} {
				var err error
				if state == "flushed" {
					err = db.Flush()
				} else {
					err = db.Compact(context.Background(), []byte{0}, []byte{0xff}, true)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.Run(state+"/ebb", func(b *testing.B) {
					ctx := context.Background()
					b.ReportAllocs()
					defer reportRead(b, db)()
					for b.Loop() {
						items, err := e.svc.Get(ctx, feat, benchEntity, time.Time{}, benchGet)
						if err != nil || len(items) != benchGet {
							b.Fatalf("get: %d items, %v", len(items), err)
						}
					}
					reportItems(b, benchGet)
				})
				b.Run(state+"/raw-pebble", func(b *testing.B) { rawRead(b, db, prefix) })
			}
		})
	}
}

// fillN adds n items to the benchmark list, one second apart back from
// now, in adds of lists.MaxItemsPerAdd.
func (e *benchEnv) fillN(b *testing.B, n int) {
	items := make([]lists.Item, 0, lists.MaxItemsPerAdd)
	for i := 0; i < n; i += len(items) {
		items = items[:0]
		for j := i; j < min(i+lists.MaxItemsPerAdd, n); j++ {
			items = append(items, lists.Item{Value: benchValue(j), Timestamp: e.now.Add(-time.Duration(j) * time.Second)})
		}
		if _, err := e.svc.Add(context.Background(), feat, benchEntity, items); err != nil {
			b.Fatal(err)
		}
	}
}

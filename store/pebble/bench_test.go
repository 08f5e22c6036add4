package pebble

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// The benchmarks run on disk (b.TempDir), each beside its baseline in the
// same run: raw Pebble for the cost of a write, an idle store for a store
// being swept, unconditional writes for conditional ones.

const (
	benchBatch    = 1000 // rows per batch in BenchmarkWrite
	benchValueLen = 100  // value bytes per row
	// benchWriters is how many goroutines per CPU write at once in the
	// parallel benchmarks: synced commits from concurrent writers share
	// one fsync (group commit), which is how a server under load writes.
	benchWriters = 64
)

func openBench(b *testing.B, noSync bool) *Store {
	b.Helper()
	s, err := Open(b.TempDir(), Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.CreateTable(context.Background(), eventsSpec); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchRows is one batch of benchBatch upserts of whole rows (every value
// column) in partition p, 100-byte values.
func benchRows(p string) []store.Mutation {
	muts := make([]store.Mutation, benchBatch)
	value := bytes.Repeat([]byte{'v'}, benchValueLen)
	for i := range muts {
		muts[i] = store.Mutation{Partition: []any{p}, Clustering: []any{int64(i)}, NoExpiry: true,
			Cells: []store.Cell{{Column: "payload", Value: value}}}
	}
	return muts
}

func syncName(noSync bool) string {
	if noSync {
		return "nosync"
	}
	return "sync"
}

// BenchmarkWrite writes batches of 1000 new rows of 100-byte values through
// the store, each batch to a partition of its own: validation, key
// encoding, the row fragment and the commit.
func BenchmarkWrite(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(syncName(noSync), func(b *testing.B) {
			s := openBench(b, noSync)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(benchBatch * benchValueLen)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				muts := benchRows(fmt.Sprintf("p%08d", i))
				b.StartTimer()
				if err := s.Write(ctx, eventsSpec.Name, muts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteRawPebble commits what BenchmarkWrite stores, the same key
// and value bytes, straight to Pebble in batches of 1000 Sets with the same
// sync setting: the row keys are built from the partition's encoding and
// the clustering keys' (made once), the value is the row as the store
// wrote it.
func BenchmarkWriteRawPebble(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(syncName(noSync), func(b *testing.B) {
			s := openBench(b, noSync)
			if err := s.Write(context.Background(), eventsSpec.Name, benchRows("probe")); err != nil {
				b.Fatal(err)
			}
			t := s.tables[eventsSpec.Name]
			_, probe, err := kit.ResolvePartition(&t.Spec, []any{"probe"})
			if err != nil {
				b.Fatal(err)
			}
			cks := make([][]byte, benchBatch)
			for i := range cks {
				cks[i] = kit.EncodeClustering(&t.Spec, []any{int64(i)})
			}
			value, closer, err := s.db.Get(rowKey(nil, t.prefix, probe, cks[0]))
			if err != nil {
				b.Fatal(err)
			}
			value = bytes.Clone(value)
			closer.Close()
			wo := pebble.Sync
			if noSync {
				wo = pebble.NoSync
			}
			var key []byte
			b.ReportAllocs()
			b.SetBytes(benchBatch * benchValueLen)
			for i := 0; b.Loop(); i++ {
				_, pk, err := kit.ResolvePartition(&t.Spec, []any{fmt.Sprintf("p%08d", i)})
				if err != nil {
					b.Fatal(err)
				}
				batch := s.db.NewBatch()
				for _, ck := range cks {
					key = rowKey(key[:0], t.prefix, pk, ck)
					_ = batch.Set(key, value, nil)
				}
				if err := batch.Commit(wo); err != nil {
					b.Fatal(err)
				}
				_ = batch.Close()
			}
		})
	}
}

// BenchmarkWriteWhileSweeping adds 10 rows per synced write from
// benchWriters goroutines per CPU, on an idle store (the baseline) and
// while a sweeper deletes expired rows in synced batches of 1000
// DeleteIfExpired, as the expiry sweeper does: a sweeper batch reads each
// row before deleting it, so it locks those rows against other writers.
func BenchmarkWriteWhileSweeping(b *testing.B) {
	for _, sweeping := range []bool{false, true} {
		name := "idle"
		if sweeping {
			name = "sweeping"
		}
		b.Run(name, func(b *testing.B) {
			s := openBench(b, false)
			ctx := context.Background()
			var swept atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if sweeping {
				wg.Go(func() { sweepLoop(b, s, stop, &swept) })
			}
			var seq atomic.Int64
			value := bytes.Repeat([]byte{'v'}, benchValueLen)
			b.ReportAllocs()
			b.SetParallelism(benchWriters)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				muts := make([]store.Mutation, 10)
				for pb.Next() {
					n := seq.Add(1)
					for i := range muts {
						muts[i] = store.Mutation{Partition: []any{fmt.Sprintf("w%d", n%512)}, Clustering: []any{n*10 + int64(i)},
							NoExpiry: true, Cells: []store.Cell{{Column: "payload", Value: value}}}
					}
					if err := s.Write(ctx, eventsSpec.Name, muts); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "rows/s")
			if sweeping {
				b.ReportMetric(float64(swept.Load())/b.Elapsed().Seconds(), "swept/s")
			}
		})
	}
}

// sweepLoop writes 1000 already-expired rows (deferred, cheaply) and
// deletes them with one synced batch of DeleteIfExpired, until stop.
func sweepLoop(b *testing.B, s *Store, stop <-chan struct{}, swept *atomic.Int64) {
	ctx := context.Background()
	value := bytes.Repeat([]byte{'x'}, benchValueLen)
	ups := make([]store.Mutation, benchBatch)
	dels := make([]store.Mutation, benchBatch)
	for round := int64(0); ; round++ {
		select {
		case <-stop:
			return
		default:
		}
		past := time.Now().Add(-time.Second)
		for i := range ups {
			p, c := []any{fmt.Sprintf("e%d", i%100)}, []any{round*benchBatch + int64(i)}
			ups[i] = store.Mutation{Partition: p, Clustering: c, ExpiresAt: past,
				Cells: []store.Cell{{Column: "payload", Value: value}}}
			dels[i] = store.Mutation{Kind: store.DeleteIfExpired, Partition: p, Clustering: c}
		}
		if err := s.WriteDeferred(ctx, eventsSpec.Name, ups); err != nil {
			b.Error(err)
			return
		}
		if err := s.Write(ctx, eventsSpec.Name, dels); err != nil {
			b.Error(err)
			return
		}
		swept.Add(benchBatch)
	}
}

// BenchmarkConditionalWrite writes one new row per synced write from
// benchWriters goroutines per CPU, unconditionally (the baseline) and with
// an IfAbsent condition, which reads the row under its lock first.
func BenchmarkConditionalWrite(b *testing.B) {
	for _, cond := range []bool{false, true} {
		name := "unconditional"
		if cond {
			name = "if-absent"
		}
		b.Run(name, func(b *testing.B) {
			s := openBench(b, false)
			ctx := context.Background()
			var seq atomic.Int64
			value := bytes.Repeat([]byte{'v'}, benchValueLen)
			b.ReportAllocs()
			b.SetParallelism(benchWriters)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					m := store.Mutation{Partition: []any{fmt.Sprintf("t%d", n%64)}, Clustering: []any{n}, NoExpiry: true,
						Cells: []store.Cell{{Column: "payload", Value: value}}}
					if cond {
						m.If = &store.Condition{Kind: store.IfAbsent}
					}
					if err := s.Write(ctx, eventsSpec.Name, []store.Mutation{m}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

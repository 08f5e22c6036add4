package timeseries

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// The benchmarks come in pairs, each beside its baseline, so that one run
// gives the ratios:
//
//	BenchmarkPut / BenchmarkPutRawPebble            target <= 1.5
//	BenchmarkQueryAcrossShards / BenchmarkQuery     target <= 1.5
//	BenchmarkExpireByRowDeletes / BenchmarkExpireByDrop  target >= 100
//
// Stores are on disk (b.TempDir) without sync, so that the figures show the
// CPU cost of the code rather than the disk's fsync latency.

const benchBatch = 1000

var benchNow = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

var benchConfig = Config{Name: "ev", TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 30 * 24 * time.Hour, Runway: 2}

func benchService(b *testing.B) (*Service, *ebbpebble.Store) {
	b.Helper()
	st, err := ebbpebble.Open(b.TempDir(), ebbpebble.Options{NoSync: true, Now: func() time.Time { return benchNow }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	svc, err := New(context.Background(), st, Options{Now: func() time.Time { return benchNow }})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := svc.Create(context.Background(), benchConfig); err != nil {
		b.Fatal(err)
	}
	return svc, st
}

// benchEvents returns n events with 100-byte payloads, spread over 10
// index ids and the hour before start.
func benchEvents(n int, start time.Time, tag string) []Event {
	payload := make([]byte, 100)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	out := make([]Event, n)
	for i := range out {
		out[i] = Event{
			IndexID:   fmt.Sprintf("account-%d", i%10),
			EventID:   fmt.Sprintf("%s-event-%08d", tag, i),
			Timestamp: start.Add(-time.Duration(i+1) * time.Second),
			Payload:   payload,
		}
	}
	return out
}

func reportEvents(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkPut writes 1000 events per op through the Service.
func BenchmarkPut(b *testing.B) {
	svc, _ := benchService(b)
	events := benchEvents(benchBatch, benchNow, "put")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := svc.Put(ctx, "ev", events); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, benchBatch)
}

// BenchmarkPutRawPebble writes the very key/value bytes BenchmarkPut's
// events become, captured from the store, straight into a Pebble batch:
// the floor the whole stack (validation, routing, encoding) is measured
// against.
func BenchmarkPutRawPebble(b *testing.B) {
	svc, st := benchService(b)
	db := st.DB()
	before := scan(b, db)
	if _, err := svc.Put(context.Background(), "ev", benchEvents(benchBatch, benchNow, "put")); err != nil {
		b.Fatal(err)
	}
	var keys, vals [][]byte
	for k, v := range scan(b, db) {
		if _, ok := before[k]; !ok {
			keys, vals = append(keys, []byte(k)), append(vals, v)
		}
	}
	if len(keys) != benchBatch {
		b.Fatalf("captured %d keys, want %d", len(keys), benchBatch)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		batch := db.NewBatch()
		for i := range keys {
			if err := batch.Set(keys[i], vals[i], nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
	reportEvents(b, benchBatch)
}

func scan(b *testing.B, db *pebble.DB) map[string][]byte {
	b.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	out := map[string][]byte{}
	for it.First(); it.Valid(); it.Next() {
		out[string(it.Key())] = append([]byte(nil), it.Value()...)
	}
	return out
}

// BenchmarkQuery reads 100 events from one partition.
func BenchmarkQuery(b *testing.B) {
	// Hour-long partitions: 1000 events a second apart fill the hour
	// before 11:00 and part of the one before.
	end := benchNow.Add(-time.Hour).Truncate(time.Hour)
	benchQuery(b, end, end.Add(-10*time.Minute), end)
}

// BenchmarkQueryAcrossShards reads 100 events straddling a shard boundary
// (midnight): 50 from the last partition of one shard, 50 from the first of
// the next.
func BenchmarkQueryAcrossShards(b *testing.B) {
	midnight := benchNow.Truncate(24 * time.Hour)
	benchQuery(b, midnight.Add(30*time.Minute), midnight.Add(-50*time.Second), midnight.Add(50*time.Second))
}

func benchQuery(b *testing.B, writeEnd, from, to time.Time) {
	svc, _ := benchService(b)
	ctx := context.Background()
	events := benchEvents(benchBatch*10, writeEnd, "q")
	for i := range events {
		events[i].IndexID = "account-q"
	}
	if _, err := svc.Put(ctx, "ev", events); err != nil {
		b.Fatal(err)
	}
	q := Query{IndexID: "account-q", From: from, To: to, Limit: 100}
	page, err := svc.Query(ctx, "ev", q)
	if err != nil || len(page.Events) != 100 {
		b.Fatalf("query: %d events, %v", len(page.Events), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := svc.Query(ctx, "ev", q); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, 100)
}

const expireRows = 100_000

// BenchmarkExpireByDrop expires a shard of 100k rows by dropping it.
func BenchmarkExpireByDrop(b *testing.B) {
	benchExpire(b, func(svc *Service, st *ebbpebble.Store, table string, events []Event) error {
		return st.DropTable(context.Background(), table)
	})
}

// BenchmarkExpireByRowDeletes expires the same 100k rows by deleting them
// one by one, which is what a per-row TTL costs.
func BenchmarkExpireByRowDeletes(b *testing.B) {
	benchExpire(b, func(svc *Service, st *ebbpebble.Store, table string, events []Event) error {
		ctx := context.Background()
		for _, e := range events {
			m := mutationDeleting(benchConfig, e)
			if err := st.Write(ctx, table, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// benchExpire fills a fresh shard with 100k rows each op, flushes them to
// sstables as weeks of age would, then expires them with expire. Filling is far slower than dropping, so the timer keeps
// running through it (keeping b.N small) and ns/op, B/op and allocs/op are
// replaced by the cost of expire alone.
func benchExpire(b *testing.B, expire func(*Service, *ebbpebble.Store, string, []Event) error) {
	svc, st := benchService(b)
	ctx := context.Background()
	shard := benchNow.Truncate(24 * time.Hour)
	table := benchConfig.shardTable(shard.UnixMilli())
	// 100k events 864 ms apart fill the day-long shard.
	events := benchEvents(expireRows, shard.Add(24*time.Hour), "x")
	for i := range events {
		events[i].Timestamp = shard.Add(time.Duration(i) * 864 * time.Millisecond)
	}
	var spent time.Duration
	var allocs, bytes uint64
	var ms runtime.MemStats
	b.ReportAllocs()
	for range b.N {
		if _, _, err := svc.Reconcile(ctx, "ev", shardRunOptions()); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(events); i += MaxBatch {
			if _, err := svc.Put(ctx, "ev", events[i:min(i+MaxBatch, len(events))]); err != nil {
				b.Fatal(err)
			}
		}
		// A shard expires weeks after its rows were written, long after
		// they left the memtable for sstables.
		if err := st.DB().Flush(); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		a0, b0 := ms.Mallocs, ms.TotalAlloc
		start := time.Now()
		if err := expire(svc, st, table, events); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
		runtime.ReadMemStats(&ms)
		allocs += ms.Mallocs - a0
		bytes += ms.TotalAlloc - b0
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(allocs)/float64(b.N), "allocs/op")
	b.ReportMetric(float64(bytes)/float64(b.N), "B/op")
	b.ReportMetric(float64(expireRows*b.N)/spent.Seconds(), "rows/s")
}

// mutationDeleting is the row delete a per-row TTL amounts to for e.
func mutationDeleting(cfg Config, e Event) []store.Mutation {
	ms := e.Timestamp.UnixMilli()
	return []store.Mutation{{
		Kind:       store.DeleteRow,
		Partition:  []any{e.IndexID, cfg.bucketOf(ms)},
		Clustering: []any{time.UnixMilli(ms).UTC(), e.EventID},
	}}
}

// shardRunOptions re-creates shards dropped by the previous op.
func shardRunOptions() shardmgr.RunOptions { return shardmgr.RunOptions{} }

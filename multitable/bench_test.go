package multitable

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// Benchmarks on the embedded backend on disk. Each has a baseline beside
// it: the same work as one plain store operation on a dedicated table
// (one row per item, no listing to maintain), so the ratio shows what
// multiplexing and listing cost.
//
//	go test -run '^$' -bench . -benchtime 2s ./multitable/

// baselineSpec is a dedicated table holding one logical table's items.
var baselineSpec = store.TableSpec{
	Name:         "baseline",
	PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}, {Name: "key", Type: store.TypeText}},
	Values:       []store.Column{{Name: "attrs", Type: store.TypeBytes}},
}

func benchStore(b *testing.B, noSync bool) (*ebbpebble.Store, *Registry) {
	b.Helper()
	st, err := ebbpebble.Open(b.TempDir(), ebbpebble.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	reg, err := New(context.Background(), st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := reg.CreateTable(context.Background(), "bench", Config{DefaultTTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	if err := st.CreateTable(context.Background(), baselineSpec); err != nil {
		b.Fatal(err)
	}
	return st, reg
}

var benchAttrs = json.RawMessage(`{"user":"u-123456","plan":"pro","score":0.93,"tags":["a","b","c"]}`)

// benchEpoch is where benchmark timestamps start.
var benchEpoch = time.Now().Truncate(time.Millisecond)

func benchTime(i int) time.Time { return benchEpoch.Add(time.Duration(i) * time.Millisecond) }

func baselineWrite(ctx context.Context, st store.Store, i int) error {
	return st.Write(ctx, baselineSpec.Name, []store.Mutation{{
		Partition: []any{"bench"}, Clustering: []any{benchTime(i), fmt.Sprint("key", i)},
		Cells: []store.Cell{{Column: "attrs", Value: []byte(benchAttrs)}},
	}})
}

func BenchmarkPut(b *testing.B) {
	for _, mode := range []struct {
		name   string
		noSync bool
	}{{"sync", false}, {"nosync", true}} {
		// separate writes the entry and then the item, as on a store
		// without guarded batches (DynamoDB, CQL).
		for _, c := range []struct {
			name    string
			guarded bool
		}{{"multitable", true}, {"multitable/separate", false}} {
			b.Run(mode.name+"/"+c.name, func(b *testing.B) {
				_, reg := benchStore(b, mode.noSync)
				reg.guarded = reg.guarded && c.guarded
				loop(b, func(ctx context.Context, i int) error {
					_, err := reg.Put(ctx, "bench", PutItem{Key: fmt.Sprint("key", i), Timestamp: benchTime(i), Attributes: benchAttrs})
					return err
				})
			})
		}
		b.Run(mode.name+"/baseline", func(b *testing.B) {
			st, _ := benchStore(b, mode.noSync)
			loop(b, func(ctx context.Context, i int) error { return baselineWrite(ctx, st, i) })
		})
	}
}

// loop runs op for b.Loop's iterations, numbered from 0, and reports
// ops/s.
func loop(b *testing.B, op func(ctx context.Context, i int) error) {
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := op(ctx, i); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkPutParallel is BenchmarkPut/sync from 64 writers at once, as
// an HTTP server's handlers write: puts to distinct keys share the
// store's syncs (group commit), beside the raw write from as many writers.
// "served" is the same over the decorators `ebb serve` adds;
// "multitable/separate" is "multitable" without guarded batches.
//
//	go test -run '^$' -bench BenchmarkPutParallel -benchtime 2s ./multitable/
func BenchmarkPutParallel(b *testing.B) {
	run := func(b *testing.B, put func(ctx context.Context, i int) error) {
		var next atomic.Int64
		b.SetParallelism(32) // 64 writers on 2 cores
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if err := put(ctx, int(next.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	}
	b.Run("multitable", func(b *testing.B) {
		_, reg := benchStore(b, false)
		run(b, func(ctx context.Context, i int) error {
			_, err := reg.Put(ctx, "bench", PutItem{Key: fmt.Sprint("key", i), Timestamp: benchTime(i), Attributes: benchAttrs})
			return err
		})
	})
	// multitable/separate writes the entry and then the item, as on a
	// store without guarded batches (DynamoDB, CQL): what one batch saves.
	b.Run("multitable/separate", func(b *testing.B) {
		_, reg := benchStore(b, false)
		reg.guarded = false
		run(b, func(ctx context.Context, i int) error {
			_, err := reg.Put(ctx, "bench", PutItem{Key: fmt.Sprint("key", i), Timestamp: benchTime(i), Attributes: benchAttrs})
			return err
		})
	})
	// served/ttl puts items that expire, as the other cases do, so each
	// also writes expiry-index rows; served/nottl, as bench/overload/puts.sh
	// does, puts items that never expire.
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"served/ttl", time.Hour}, {"served/nottl", 0}} {
		b.Run(c.name, func(b *testing.B) {
			reg := servedRegistry(b, c.ttl)
			run(b, func(ctx context.Context, i int) error {
				_, err := reg.Put(ctx, "bench", PutItem{Key: fmt.Sprint("key", i), Timestamp: benchTime(i), Attributes: benchAttrs})
				return err
			})
		})
	}
	b.Run("baseline", func(b *testing.B) {
		st, _ := benchStore(b, false)
		run(b, func(ctx context.Context, i int) error { return baselineWrite(ctx, st, i) })
	})
}

// servedRegistry is a Registry over the store `ebb serve` runs: the
// embedded backend, synced, under the meter and the expiry decorator (the
// sweeper not started), so that what is served is what is measured. Its
// table "bench" has default TTL ttl.
func servedRegistry(b *testing.B, ttl time.Duration) *Registry {
	b.Helper()
	ctx := context.Background()
	raw, err := ebbpebble.Open(b.TempDir(), ebbpebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close() })
	metered, err := meter.Wrap(raw, meter.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := expiry.Wrap(ctx, metered, expiry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	reg, err := New(ctx, st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := reg.CreateTable(ctx, "bench", Config{DefaultTTL: ttl}); err != nil {
		b.Fatal(err)
	}
	return reg
}

const benchItems = 10000

func BenchmarkGet(b *testing.B) {
	b.Run("multitable", func(b *testing.B) {
		_, reg := benchStore(b, true)
		ctx := context.Background()
		for i := range benchItems {
			if _, err := reg.Put(ctx, "bench", PutItem{Key: fmt.Sprint("key", i), Timestamp: benchTime(i), Attributes: benchAttrs}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := reg.Get(ctx, "bench", fmt.Sprint("key", i%benchItems)); err != nil {
				b.Fatal(err)
			}
			i += 7919
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("baseline", func(b *testing.B) {
		st, _ := benchStore(b, true)
		ctx := context.Background()
		stamps := make([]time.Time, benchItems)
		for i := range benchItems {
			stamps[i] = benchTime(i)
			if err := baselineWrite(ctx, st, i); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := i % benchItems
			if _, err := st.Get(ctx, baselineSpec.Name, []any{"bench"}, []any{stamps[k], fmt.Sprint("key", k)}); err != nil {
				b.Fatal(err)
			}
			i += 7919
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
}

// BenchmarkList reads pages of 100 items at random positions of a table
// of 10000 items spread over about 3 hours (several buckets).
func BenchmarkList(b *testing.B) {
	const page = 100
	spread := func(i int) time.Time { return time.Unix(1_800_000_000, 0).Add(time.Duration(i) * time.Second) }
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("multitable/par%d", par), func(b *testing.B) {
			st, err := ebbpebble.Open(b.TempDir(), ebbpebble.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			ctx := context.Background()
			reg, err := New(ctx, st, Options{ReadParallelism: par})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := reg.CreateTable(ctx, "bench", Config{}); err != nil {
				b.Fatal(err)
			}
			for i := range benchItems {
				if _, err := reg.Put(ctx, "bench", PutItem{Key: fmt.Sprint("key", i), Timestamp: spread(i), Attributes: benchAttrs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				after := spread(i % (benchItems - page))
				p, err := reg.List(ctx, "bench", ListQuery{After: &after, Limit: page})
				if err != nil || len(p.Items) != page {
					b.Fatalf("%d items, %v", len(p.Items), err)
				}
				i += 7919
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(float64(b.N*page)/b.Elapsed().Seconds(), "items/s")
		})
	}
	b.Run("baseline", func(b *testing.B) {
		st, _ := benchStore(b, true)
		ctx := context.Background()
		for i := range benchItems {
			if err := st.Write(ctx, baselineSpec.Name, []store.Mutation{{
				Partition: []any{"bench"}, Clustering: []any{spread(i), fmt.Sprint("key", i)},
				Cells: []store.Cell{{Column: "attrs", Value: []byte(benchAttrs)}},
			}}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			after := spread(i % (benchItems - page))
			p, err := kit.Query(ctx, st, baselineSpec.Name, store.Query{Partition: []any{"bench"}, Low: store.Bound{Values: []any{after}}, Limit: page})
			if err != nil || len(p.Rows) != page {
				b.Fatalf("%d rows, %v", len(p.Rows), err)
			}
			i += 7919
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		b.ReportMetric(float64(b.N*page)/b.Elapsed().Seconds(), "items/s")
	})
}

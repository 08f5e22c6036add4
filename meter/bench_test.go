package meter_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/store"
)

// The benchmarks run each hot path of the embedded backend bare and
// through the meter, side by side in one run, so that the ratio is the
// meter's overhead on this machine. The backend runs in memory without
// syncing, its cheapest setting, where the overhead is the largest share.
//
//	go test -run '^$' -bench . -benchmem ./meter/

var benchSpec = store.TableSpec{
	Name:         "events_1719446400",
	PartitionKey: []store.Column{{Name: "index_id", Type: store.TypeText}, {Name: "bucket", Type: store.TypeInt64}},
	Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}, {Name: "event_id", Type: store.TypeText}},
	Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
}

// benchStore opens a fresh embedded store for one sub-benchmark, bare or
// metered, so that neither runs beside the other's data.
func benchStore(b *testing.B, name string) store.Store {
	var s store.Store = testbackend.Pebble(b, nil)
	if name == "metered" {
		m, err := meter.Wrap(s, meter.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s = m
	}
	if err := s.CreateTable(b.Context(), benchSpec); err != nil {
		b.Fatal(err)
	}
	return s
}

// variants are the sub-benchmarks, run in turn so that -count alternates
// them.
var variants = []string{"bare", "metered"}

func event(i int) store.Mutation {
	return store.Mutation{
		Partition:  []any{"acc_1", int64(i / 1000)},
		Clustering: []any{time.UnixMilli(1_719_446_400_000 + int64(i)).UTC(), fmt.Sprintf("e%08d", i)},
		Cells:      []store.Cell{{Column: "payload", Value: make([]byte, 200)}},
		NoExpiry:   true,
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, name := range variants {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			b.ReportAllocs()
			batch := make([]store.Mutation, 1)
			i := 0
			for b.Loop() {
				batch[0] = event(i)
				i++
				if err := s.Write(b.Context(), benchSpec.Name, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteBatch100(b *testing.B) {
	for _, name := range variants {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			b.ReportAllocs()
			batch := make([]store.Mutation, 100)
			i := 0
			for b.Loop() {
				for j := range batch {
					batch[j] = event(i)
					batch[j].Partition = batch[0].Partition
					i++
				}
				if err := s.Write(b.Context(), benchSpec.Name, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkScan100(b *testing.B) {
	for _, name := range variants {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			batch := make([]store.Mutation, 1000)
			for i := range batch {
				batch[i] = event(i)
			}
			if err := s.Write(b.Context(), benchSpec.Name, batch); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			q := store.Query{Partition: []any{"acc_1", int64(0)}, Limit: 100}
			for b.Loop() {
				n := 0
				if _, err := s.Scan(b.Context(), benchSpec.Name, q, func(*store.RawRow) error { n++; return nil }); err != nil || n != 100 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, name := range variants {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			if err := s.Write(b.Context(), benchSpec.Name, []store.Mutation{event(0)}); err != nil {
				b.Fatal(err)
			}
			m := event(0)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Get(b.Context(), benchSpec.Name, m.Partition, m.Clustering); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

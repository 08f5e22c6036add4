package meter_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/pairbench"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/store"
)

// The benchmarks run each hot path of the embedded backend bare and
// through the meter in the same run. The backend runs in memory without
// syncing, its cheapest setting, where the meter's share is the largest.
//
// BenchmarkOverhead is the measure of record: it alternates short chunks
// of operations on a bare and a metered store inside one benchmark, so that
// both see the same machine from one millisecond to the next, and reports
// the metered time over the bare time as metered/bare (the median of the
// chunk pairs), besides each side's ns/op:
//
//	go test -run '^$' -bench Overhead -count 6 ./meter/ | tee overhead.txt
//	benchstat -col /op overhead.txt
//
// BenchmarkWrite, BenchmarkScan100 and BenchmarkGet run the two sides as
// sub-benchmarks (store=bare, store=metered), one after the other, for
// their allocations; on a busy machine their times drift apart between the
// two halves of a run.

var benchSpec = store.TableSpec{
	Name:         "events_1719446400",
	PartitionKey: []store.Column{{Name: "index_id", Type: store.TypeText}, {Name: "bucket", Type: store.TypeInt64}},
	Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}, {Name: "event_id", Type: store.TypeText}},
	Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
}

// benchStore opens a fresh embedded store for one side, bare or metered,
// so that neither runs beside the other's data.
func benchStore(b *testing.B, metered bool) store.Store {
	var s store.Store = testbackend.Pebble(b, nil)
	if metered {
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

// variants are the sub-benchmarks of the side-by-side benchmarks.
var variants = []struct {
	name    string
	metered bool
}{{"store=bare", false}, {"store=metered", true}}

func event(i int) store.Mutation {
	return store.Mutation{
		Partition:  []any{"acc_1", int64(i / 1000)},
		Clustering: []any{time.UnixMilli(1_719_446_400_000 + int64(i)).UTC(), fmt.Sprintf("e%08d", i)},
		Cells:      []store.Cell{{Column: "payload", Value: make([]byte, 200)}},
		NoExpiry:   true,
	}
}

// hotPath is one embedded hot path: setup fills a fresh store and returns
// the operation, whose argument counts the calls made on that store.
type hotPath struct {
	name  string
	setup func(b *testing.B, s store.Store) func(i int)
}

var hotPaths = []hotPath{
	{"write", func(b *testing.B, s store.Store) func(int) {
		batch := make([]store.Mutation, 1)
		return func(i int) {
			batch[0] = event(i)
			if err := s.Write(b.Context(), benchSpec.Name, batch); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{"scan100", func(b *testing.B, s store.Store) func(int) {
		batch := make([]store.Mutation, 1000)
		for i := range batch {
			batch[i] = event(i)
		}
		if err := s.Write(b.Context(), benchSpec.Name, batch); err != nil {
			b.Fatal(err)
		}
		q := store.Query{Partition: []any{"acc_1", int64(0)}, Limit: 100}
		n := 0
		count := func(*store.RawRow) error { n++; return nil }
		return func(int) {
			n = 0
			if _, err := s.Scan(b.Context(), benchSpec.Name, q, count); err != nil || n != 100 {
				b.Fatal(n, err)
			}
		}
	}},
	{"get", func(b *testing.B, s store.Store) func(int) {
		if err := s.Write(b.Context(), benchSpec.Name, []store.Mutation{event(0)}); err != nil {
			b.Fatal(err)
		}
		m := event(0)
		return func(int) {
			if _, err := s.Get(b.Context(), benchSpec.Name, m.Partition, m.Clustering); err != nil {
				b.Fatal(err)
			}
		}
	}},
}

func BenchmarkOverhead(b *testing.B) {
	for _, p := range hotPaths {
		b.Run("op="+p.name, func(b *testing.B) {
			bare, metered := p.setup(b, benchStore(b, false)), p.setup(b, benchStore(b, true))
			pairbench.Run(b, "bare", "metered", bare, metered)
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			s := benchStore(b, v.metered)
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
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			s := benchStore(b, v.metered)
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
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			op := hotPaths[1].setup(b, benchStore(b, v.metered))
			b.ReportAllocs()
			for b.Loop() {
				op(0)
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			op := hotPaths[2].setup(b, benchStore(b, v.metered))
			b.ReportAllocs()
			for b.Loop() {
				op(0)
			}
		})
	}
}

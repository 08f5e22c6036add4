package archive_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// BenchmarkArchiveShard measures the archive of one shard of an index
// (its layout: (index_id, bucket), ts, event_id -> payload) of a million
// events on the embedded backend to a directory: export, Put, read back
// and verify, manifest ("archive"), beside its baseline in the same run,
// the export's read of the shard alone ("read"). Each reports rows/s, the
// table's logical MB/s (keys and values as the store counts them) and the
// process's CPU seconds; the archive also the Parquet object's MB/s and
// how far the live heap grew above what it was before (heap-growth-MB),
// which stays near the row group's bound however large the shard:
//
//	go test -run '^$' -bench BenchmarkArchiveShard -benchtime 1x -count 3 ./archive/
func BenchmarkArchiveShard(b *testing.B) {
	const (
		ids        = 125 // index_id values
		buckets    = 40  // partition buckets per index_id
		perPart    = 200 // rows per partition
		payloadLen = 200 // bytes of payload per row
		rows       = ids * buckets * perPart
	)
	ctx := context.Background()
	st := testbackend.Pebble(b, time.Now)
	spec := store.TableSpec{
		Name:         "ev_1772582400",
		PartitionKey: []store.Column{{Name: "index_id", Type: store.TypeText}, {Name: "bucket", Type: store.TypeInt64}},
		Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}, {Name: "event_id", Type: store.TypeText}},
		Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
		NeverExpires: true,
	}
	if err := st.CreateTable(ctx, spec); err != nil {
		b.Fatal(err)
	}
	// Each row's payload is its own: random bytes as hex, which compress
	// to about half, as JSON or text payloads do, so that the object is
	// as large as a real shard's would be.
	rnd := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, payloadLen/2)
	base := time.Unix(1772582400, 0).UTC()
	for id := range ids {
		for bk := range buckets {
			batch := make([]store.Mutation, 0, perPart)
			for r := range perPart {
				ts := base.Add(time.Duration(bk)*time.Hour + time.Duration(r)*time.Second)
				batch = append(batch, store.Mutation{
					Partition:  []any{fmt.Sprintf("account-%04d", id), int64(bk)},
					Clustering: []any{ts, fmt.Sprintf("evt-%08d", r)},
					Cells:      []store.Cell{{Column: "payload", Value: randomHex(rnd, raw)}},
				})
			}
			if err := st.Write(ctx, spec.Name, batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	stats, err := st.Stats(ctx, spec.Name)
	if err != nil {
		b.Fatal(err)
	}
	// The baseline, in the same run: the read an export makes, every
	// partition listed and scanned, without writing anything.
	b.Run("read", func(b *testing.B) {
		cpu := cpuTime()
		for i := 0; i < b.N; i++ {
			if n := readShard(b, st, spec.Name); n != rows {
				b.Fatalf("read %d rows, want %d", n, rows)
			}
		}
		report(b, rows, stats.Bytes, cpuTime()-cpu)
	})
	b.Run("archive", func(b *testing.B) {
		a, err := archive.New(archive.Options{Store: st, TimeColumn: "ts"})
		if err != nil {
			b.Fatal(err)
		}
		var objBytes int64
		runtime.GC()
		heap0 := liveHeap()
		peak := watchHeap(b)
		cpu := cpuTime()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
			loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
			if _, err := a.ArchiveShard(ctx, loc, archive.Shard{Index: "ev", Table: spec.Name, Start: base, End: base.Add(24 * time.Hour)}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			ms, err := a.List(ctx, loc, "ev")
			if err != nil || len(ms) != 1 || ms[0].Rows != rows {
				b.Fatalf("archives %+v, %v", ms, err)
			}
			objBytes = ms[0].Bytes
			b.StartTimer()
		}
		report(b, rows, stats.Bytes, cpuTime()-cpu)
		b.ReportMetric(float64(objBytes)/1e6/(b.Elapsed().Seconds()/float64(b.N)), "object-MB/s")
		b.ReportMetric(float64(objBytes)/1e6, "object-MB")
		b.ReportMetric(float64(peak()-min(heap0, peak()))/1e6, "heap-growth-MB")
	})
}

// report reports rows/s, the table's MB/s and the CPU seconds of an
// operation (the whole process's, user and system).
func report(b *testing.B, rows, tableBytes int64, cpu time.Duration) {
	secs := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(rows)/secs, "rows/s")
	b.ReportMetric(float64(tableBytes)/1e6/secs, "table-MB/s")
	b.ReportMetric(float64(tableBytes)/1e6, "table-MB")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// readShard reads every row of table as an export does, and counts them.
func readShard(b *testing.B, st store.Store, table string) int64 {
	ctx := context.Background()
	lister, ok := store.As[store.PartitionLister](st)
	if !ok {
		b.Fatal("no partition lister")
	}
	var n int64
	var after []byte
	for {
		var parts [][]any
		var err error
		after, err = lister.Partitions(ctx, table, after, 1000, func(p []any) error { parts = append(parts, p); return nil })
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range parts {
			q := store.Query{Partition: p, Limit: store.MaxLimit}
			for {
				page, err := kit.Query(ctx, st, table, q)
				if err != nil {
					b.Fatal(err)
				}
				n += int64(len(page.Rows))
				if q.PageToken = page.NextPageToken; q.PageToken == nil {
					break
				}
			}
		}
		if after == nil {
			return n
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func randomHex(rnd *rand.Rand, raw []byte) []byte {
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	return hex.AppendEncode(nil, raw)
}

// watchHeap samples the heap the last garbage collection found live,
// every 10 ms (runtime/metrics, without stopping the world), until the
// benchmark ends, and returns a function that stops the sampling and
// gives the largest sample.
func watchHeap(b *testing.B) func() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	end := func() uint64 {
		once.Do(func() { close(stop); <-done })
		return peak
	}
	b.Cleanup(func() { end() })
	return end
}

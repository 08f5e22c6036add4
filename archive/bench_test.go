package archive_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// BenchmarkArchiveShard measures the archive of one shard of an index
// (its layout: (index_id, bucket), ts, event_id -> payload) on the
// embedded backend to a directory: export, Put, read back and verify,
// manifest. It reports rows/s, the table's logical MB/s (keys and
// values as the store counts them) and the Parquet object's MB/s:
//
//	go test -run '^$' -bench BenchmarkArchiveShard -benchtime 3x ./archive/
func BenchmarkArchiveShard(b *testing.B) {
	const (
		ids        = 100 // index_id values
		buckets    = 24  // partition buckets per index_id
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
	payload := make([]byte, payloadLen)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	base := time.Unix(1772582400, 0).UTC()
	for id := range ids {
		for bk := range buckets {
			batch := make([]store.Mutation, 0, perPart)
			for r := range perPart {
				ts := base.Add(time.Duration(bk)*time.Hour + time.Duration(r)*time.Second)
				batch = append(batch, store.Mutation{
					Partition:  []any{fmt.Sprintf("account-%04d", id), int64(bk)},
					Clustering: []any{ts, fmt.Sprintf("evt-%08d", r)},
					Cells:      []store.Cell{{Column: "payload", Value: payload}},
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
	a, err := archive.New(archive.Options{Store: st, TimeColumn: "ts"})
	if err != nil {
		b.Fatal(err)
	}
	var objBytes int64
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
	secs := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(rows)/secs, "rows/s")
	b.ReportMetric(float64(stats.Bytes)/1e6/secs, "table-MB/s")
	b.ReportMetric(float64(objBytes)/1e6/secs, "object-MB/s")
	b.ReportMetric(float64(stats.Bytes)/1e6, "table-MB")
	b.ReportMetric(float64(objBytes)/1e6, "object-MB")
}

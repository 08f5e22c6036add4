package s3target_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/archive/s3target"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// TestIndexArchivesToS3: an index whose archive is an s3:// location has
// its expired shard archived to the bucket by the shard manager, and only
// then dropped; the rows read back from the object are the events written.
func TestIndexArchivesToS3(t *testing.T) {
	c, bucket := client(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	clk := storetest.NewClock(t0)
	st := testbackend.Pebble(t, clk.Now)
	open := s3target.Opener(s3target.Options{Client: c})
	svc, err := timeseries.New(ctx, st, timeseries.Options{Now: clk.Now, ArchiveOpen: open})
	if err != nil {
		t.Fatal(err)
	}
	loc := "s3://" + bucket + "/ebb"
	cfg := timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 24 * time.Hour, Runway: 2,
		Archive: &timeseries.ArchiveConfig{To: loc}}
	if _, _, err := svc.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	start := t0.Add(-23 * time.Hour)
	want := map[string]string{}
	var evs []timeseries.Event
	for i := range 1200 {
		e := timeseries.Event{IndexID: fmt.Sprintf("acct%d", i%4), EventID: fmt.Sprintf("e%05d", i), Timestamp: start.Add(time.Duration(i) * time.Second),
			Payload: []byte(fmt.Sprintf("payload %d", i))}
		evs = append(evs, e)
		want[e.IndexID+"/"+e.EventID] = fmt.Sprintf("%d %s", e.Timestamp.UnixMilli(), e.Payload)
	}
	if _, err := svc.WriteEvents(ctx, "ev", evs); err != nil {
		t.Fatal(err)
	}
	table := shardmgr.ShardName("ev", start)
	clk.Set(t0.Add(2 * time.Hour))
	if err := svc.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Spec(ctx, table); err == nil {
		t.Fatalf("%s not dropped", table)
	}
	ms, err := svc.Archives(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	var m archive.Manifest
	for _, x := range ms {
		if x.Table == table {
			m = x
		}
	}
	if m.Rows != int64(len(evs)) || m.Location != loc {
		t.Fatalf("manifest of %s: %+v (of %d)", table, m, len(ms))
	}
	reader, err := archive.New(archive.Options{Store: st, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = reader.ReadRows(ctx, m, func(v []any) error {
		n++
		key := v[0].(string) + "/" + v[3].(string)
		if got := fmt.Sprintf("%d %s", v[2].(time.Time).UnixMilli(), v[4].([]byte)); want[key] != got {
			return fmt.Errorf("%s: %q, want %q", key, got, want[key])
		}
		delete(want, key)
		return nil
	})
	if err != nil || n != len(evs) || len(want) != 0 {
		t.Fatalf("read back %d rows, %d not found: %v", n, len(want), err)
	}
}

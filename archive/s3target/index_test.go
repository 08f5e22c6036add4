package s3target_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/archive/archivetest"
	"github.com/ebb-data/ebb/archive/s3target"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// s3Index is an index archived to a bucket under prefix, on the embedded
// backend with a clock the test moves, holding n events in the shard that
// expires first.
type s3Index struct {
	svc   *timeseries.Service
	st    store.Store
	clk   *storetest.Clock
	t0    time.Time
	loc   string
	open  archive.Opener // the plain S3 opener, to read archives back
	table string         // the shard of the events
	evs   []timeseries.Event
}

func newS3Index(t *testing.T, c *s3.Client, bucket, prefix string, n int, wrap func(archive.Opener) archive.Opener) *s3Index {
	t.Helper()
	ctx := context.Background()
	x := &s3Index{t0: time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC), loc: "s3://" + bucket + "/" + prefix, open: s3target.Opener(s3target.Options{Client: c})}
	x.clk = storetest.NewClock(x.t0)
	x.st = testbackend.Pebble(t, x.clk.Now)
	svc, err := timeseries.New(ctx, x.st, timeseries.Options{Now: x.clk.Now, ArchiveOpen: wrap(x.open)})
	if err != nil {
		t.Fatal(err)
	}
	x.svc = svc
	cfg := timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 24 * time.Hour, Runway: 2,
		Archive: &timeseries.ArchiveConfig{To: x.loc}}
	if _, _, err := svc.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	start := x.t0.Add(-23 * time.Hour)
	for i := range n {
		x.evs = append(x.evs, timeseries.Event{IndexID: fmt.Sprintf("acct%d", i%4), EventID: fmt.Sprintf("e%05d", i), Timestamp: start.Add(time.Duration(i) * time.Second),
			Payload: []byte(fmt.Sprintf("payload %d", i))})
	}
	if _, err := svc.WriteEvents(ctx, "ev", x.evs); err != nil {
		t.Fatal(err)
	}
	x.table = shardmgr.ShardName("ev", start)
	return x
}

func (x *s3Index) exists(t *testing.T) bool {
	t.Helper()
	_, err := x.st.Spec(context.Background(), x.table)
	return err == nil
}

// readBack fails the test unless the shard's archive is in the bucket
// with a row per event, and its rows read back from the object are the
// events.
func (x *s3Index) readBack(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ms, err := x.svc.Archives(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	var m archive.Manifest
	for _, a := range ms {
		if a.Table == x.table {
			m = a
		}
	}
	if m.Rows != int64(len(x.evs)) || m.Location != x.loc {
		t.Fatalf("manifest of %s: %+v (of %d)", x.table, m, len(ms))
	}
	reader, err := archive.New(archive.Options{Store: x.st, Open: x.open})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, e := range x.evs {
		want[e.IndexID+"/"+e.EventID] = fmt.Sprintf("%d %s", e.Timestamp.UnixMilli(), e.Payload)
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
	if err != nil || n != len(x.evs) || len(want) != 0 {
		t.Fatalf("read back %d rows, %d not found: %v", n, len(want), err)
	}
}

// TestIndexArchivesToS3: an index whose archive is an s3:// location has
// its expired shard archived to the bucket by the shard manager, and only
// then dropped; the rows read back from the object are the events written.
func TestIndexArchivesToS3(t *testing.T) {
	c, bucket := client(t)
	x := newS3Index(t, c, bucket, "ebb", 1200, func(o archive.Opener) archive.Opener { return o })
	x.clk.Set(x.t0.Add(2 * time.Hour))
	if err := x.svc.Manager().RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if x.exists(t) {
		t.Fatalf("%s not dropped", x.table)
	}
	x.readBack(t)
}

// TestIndexArchiveHeldAndResumedOnS3: in a bucket as in a directory, an
// object that does not read back as written holds its shard's drop, with
// the reason in the plan; an archive killed before its manifest, its
// object then cut short in the bucket, holds it too; and the next pass
// writes the object again and drops the shard, whose rows read back.
func TestIndexArchiveHeldAndResumedOnS3(t *testing.T) {
	c, bucket := client(t)
	ctx := context.Background()
	var faults archivetest.Faults
	x := newS3Index(t, c, bucket, "held", 600, func(o archive.Opener) archive.Opener { return archivetest.Opener(o, &faults) })
	held := func() string {
		t.Helper()
		plan, _, err := x.svc.Reconcile(ctx, "ev", shardmgr.RunOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range plan.Actions {
			if a.Op == shardmgr.OpDrop && a.Table == x.table && a.Deferred {
				return a.Reason
			}
		}
		return ""
	}
	x.clk.Set(x.t0.Add(2 * time.Hour))
	faults.Corrupt.Store(true)
	if err := x.svc.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if r := held(); !x.exists(t) || !strings.Contains(r, "checksum") {
		t.Fatalf("a corrupt object in the bucket: shard kept %v, held because %q", x.exists(t), r)
	}
	// Written whole but killed before its manifest; then the object is
	// cut short, as an upload killed half-way on a store without atomic
	// puts would leave it.
	faults.Corrupt.Store(false)
	faults.KillManifests.Store(10)
	if err := x.svc.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if r := held(); !x.exists(t) || r == "" {
		t.Fatalf("an archive without its manifest: shard kept %v, held because %q", x.exists(t), r)
	}
	key := aws.String("held/ev/" + x.table + ".parquet")
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: key})
	if err != nil {
		t.Fatalf("the killed archive left no object: %v", err)
	}
	b, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: key, Body: bytes.NewReader(b[:len(b)/3])}); err != nil {
		t.Fatal(err)
	}
	faults.KillManifests.Store(0)
	if err := x.svc.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if x.exists(t) {
		t.Fatalf("not dropped on resume: %s", held())
	}
	x.readBack(t)
}

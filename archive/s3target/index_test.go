package s3target_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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

// faultyTarget wraps the S3 target: while corrupt is set each object is
// uploaded with one byte flipped, and the first killManifests manifest
// writes fail (a process killed between its object and its manifest).
type faultyTarget struct {
	archive.Target
	corrupt       *atomic.Bool
	killManifests *atomic.Int32
}

func (f faultyTarget) Put(ctx context.Context, name, path string) error {
	if f.corrupt.Load() {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b[len(b)/2] ^= 0xFF
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	return f.Target.Put(ctx, name, path)
}

func (f faultyTarget) PutBytes(ctx context.Context, name string, b []byte) error {
	if f.killManifests.Add(-1) >= 0 {
		return errors.New("killed before the manifest")
	}
	return f.Target.PutBytes(ctx, name, b)
}

// TestIndexArchiveHeldAndResumedOnS3: in a bucket as in a directory, an
// object that does not read back as written holds its shard's drop, with
// the reason in the plan; an archive killed before its manifest, its
// object then cut short in the bucket, holds it too; and the next pass
// writes the object again and drops the shard, whose rows read back.
func TestIndexArchiveHeldAndResumedOnS3(t *testing.T) {
	c, bucket := client(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	clk := storetest.NewClock(t0)
	st := testbackend.Pebble(t, clk.Now)
	var corrupt atomic.Bool
	var kill atomic.Int32
	s3open := s3target.Opener(s3target.Options{Client: c})
	svc, err := timeseries.New(ctx, st, timeseries.Options{Now: clk.Now, ArchiveOpen: func(ctx context.Context, loc string) (archive.Target, error) {
		t, err := s3open(ctx, loc)
		if err != nil {
			return nil, err
		}
		return faultyTarget{Target: t, corrupt: &corrupt, killManifests: &kill}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	loc := "s3://" + bucket + "/held"
	cfg := timeseries.Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 24 * time.Hour, Runway: 2,
		Archive: &timeseries.ArchiveConfig{To: loc}}
	if _, _, err := svc.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	start := t0.Add(-23 * time.Hour)
	var evs []timeseries.Event
	for i := range 600 {
		evs = append(evs, timeseries.Event{IndexID: fmt.Sprintf("acct%d", i%3), EventID: fmt.Sprintf("e%05d", i), Timestamp: start.Add(time.Duration(i) * time.Second),
			Payload: []byte(fmt.Sprintf("payload %d", i))})
	}
	if _, err := svc.WriteEvents(ctx, "ev", evs); err != nil {
		t.Fatal(err)
	}
	table := shardmgr.ShardName("ev", start)
	exists := func() bool {
		_, err := st.Spec(ctx, table)
		return err == nil
	}
	held := func() string {
		t.Helper()
		plan, _, err := svc.Reconcile(ctx, "ev", shardmgr.RunOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range plan.Actions {
			if a.Op == shardmgr.OpDrop && a.Table == table && a.Deferred {
				return a.Reason
			}
		}
		return ""
	}
	clk.Set(t0.Add(2 * time.Hour))
	corrupt.Store(true)
	if err := svc.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if r := held(); !exists() || !strings.Contains(r, "checksum") {
		t.Fatalf("a corrupt object in the bucket: shard kept %v, held because %q", exists(), r)
	}
	// Written whole but killed before its manifest; then the object is
	// cut short, as an upload killed half-way on a store without atomic
	// puts would leave it.
	corrupt.Store(false)
	kill.Store(10)
	if err := svc.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if r := held(); !exists() || r == "" {
		t.Fatalf("an archive without its manifest: shard kept %v, held because %q", exists(), r)
	}
	key := aws.String("held/ev/" + table + ".parquet")
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
	kill.Store(0)
	if err := svc.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatalf("not dropped on resume: %s", held())
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
	reader, err := archive.New(archive.Options{Store: st, Open: s3open})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, e := range evs {
		want[e.IndexID+"/"+e.EventID+"/"+string(e.Payload)] = true
	}
	err = reader.ReadRows(ctx, m, func(v []any) error {
		k := v[0].(string) + "/" + v[3].(string) + "/" + string(v[4].([]byte))
		if !want[k] {
			return fmt.Errorf("row %s not written, or read twice", k)
		}
		delete(want, k)
		return nil
	})
	if err != nil || len(want) != 0 || m.Rows != int64(len(evs)) {
		t.Fatalf("read back: %d rows missing, manifest rows %d: %v", len(want), m.Rows, err)
	}
}

package s3target_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/archive/s3target"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// EndpointEnv names the S3-compatible endpoint the tests use;
// scripts/with-moto.sh sets it.
const EndpointEnv = "EBB_S3_ENDPOINT"

// client returns an S3 client of the endpoint with static test
// credentials, path-style, and a fresh bucket. Without an endpoint the
// test is skipped, unless every backend is selected (make test), when it
// fails.
func client(t *testing.T) (*s3.Client, string) {
	t.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		if testselect.Everything(t) {
			t.Fatalf("%s is not set: run under scripts/with-moto.sh, as make test does", EndpointEnv)
		}
		t.Skipf("%s is not set: run under scripts/with-moto.sh (make test does)", EndpointEnv)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	bucket := fmt.Sprintf("ebb-archive-%d", time.Now().UnixNano())
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return c, bucket
}

// TestRoundTrip archives a table to S3 with the same archiver the shard
// manager calls, reads its rows back from the Parquet object, lists it,
// restores it, and holds the drop of an object corrupted in the bucket.
func TestRoundTrip(t *testing.T) {
	c, bucket := client(t)
	ctx := context.Background()
	clk := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
	st := testbackend.Pebble(t, clk.Now)
	spec := store.TableSpec{
		Name:         "ev_1772582400",
		PartitionKey: []store.Column{{Name: "id", Type: store.TypeText}, {Name: "bucket", Type: store.TypeInt64}},
		Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}},
		Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}, {Name: "note", Type: store.TypeText}},
	}
	if err := st.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	want := map[string][]any{}
	for p := range 5 {
		var batch []store.Mutation
		for i := range 300 {
			ts := time.UnixMilli(1772582400000 + int64(i)*1000).UTC()
			mu := store.Mutation{Partition: []any{fmt.Sprintf("id%d", p), int64(p)}, Clustering: []any{ts},
				Cells: []store.Cell{{Column: "payload", Value: []byte(fmt.Sprintf("%d/%d", p, i))}}}
			note := any(nil)
			if i%3 == 0 {
				note = fmt.Sprintf("note %d", i)
				mu.Cells = append(mu.Cells, store.Cell{Column: "note", Value: note})
			}
			want[fmt.Sprint(p, ts.UnixMilli())] = []any{[]byte(fmt.Sprintf("%d/%d", p, i)), note}
			batch = append(batch, mu)
		}
		if err := st.Write(ctx, spec.Name, batch); err != nil {
			t.Fatal(err)
		}
	}
	a, err := archive.New(archive.Options{Store: st, Open: s3target.Opener(s3target.Options{Client: c}), TimeColumn: "ts", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	loc := "s3://" + bucket + "/archives/ebb"
	sh := archive.Shard{Index: "ev", Table: spec.Name, Start: time.Unix(1772582400, 0), End: time.Unix(1772582400+3600, 0)}
	archived, err := a.ArchiveShard(ctx, loc, sh)
	if err != nil {
		t.Fatal(err)
	}
	if want := loc + "/ev/" + spec.Name + ".parquet"; archived.ObjectURL() != want {
		t.Errorf("archived to %s, want %s", archived.ObjectURL(), want)
	}
	ms, err := a.List(ctx, loc, "ev")
	if err != nil || len(ms) != 1 {
		t.Fatalf("listed %d archives, %v", len(ms), err)
	}
	m := ms[0]
	if m.Rows != 1500 || m.Verified.IsZero() || m.Location != loc {
		t.Fatalf("manifest %+v", m)
	}
	n := 0
	err = a.ReadRows(ctx, m, func(v []any) error {
		n++
		w, ok := want[fmt.Sprint(v[1], v[2].(time.Time).UnixMilli())]
		if !ok || string(v[3].([]byte)) != string(w[0].([]byte)) || v[4] != w[1] {
			return fmt.Errorf("row %v, want %v", v, w)
		}
		return nil
	})
	if err != nil || n != 1500 {
		t.Fatalf("read back %d rows: %v", n, err)
	}
	// Archiving again finds the verified manifest and writes nothing.
	head := func() time.Time {
		out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("archives/ebb/ev/" + spec.Name + ".parquet")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToTime(out.LastModified)
	}
	before := head()
	again, err := a.ArchiveShard(ctx, loc, sh)
	if err != nil {
		t.Fatal(err)
	}
	if again.ObjectURL() != archived.ObjectURL() || !again.Verified.Equal(archived.Verified) {
		t.Errorf("archiving again answers %s verified at %s, want the first archive's manifest", again.ObjectURL(), again.Verified)
	}
	if !head().Equal(before) {
		t.Error("a verified archive was written again")
	}

	// Restore it once the table is gone.
	if err := st.DropTable(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(ctx, loc, "ev", spec.Name)
	if err != nil || !r.Complete || r.Rows != 1500 {
		t.Fatalf("restore: %+v, %v", r, err)
	}
	if got, err := st.Stats(ctx, spec.Name); err != nil || got.Rows != 1500 {
		t.Fatalf("restored table: %+v, %v", got, err)
	}
	if _, err := a.ArchiveShard(ctx, loc, sh); !errors.Is(err, archive.ErrRestored) {
		t.Errorf("archive of a restored shard: %v, want it held", err)
	}
	if err := a.Release(ctx, "ev", spec.Name); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptObjectIsNotVerified: an object whose bytes changed in the
// bucket after its manifest no longer verifies on a restore.
func TestCorruptObjectIsNotVerified(t *testing.T) {
	c, bucket := client(t)
	ctx := context.Background()
	clk := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC))
	st := testbackend.Pebble(t, clk.Now)
	spec := store.TableSpec{Name: "ix_3600", PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}},
		Clustering: []store.Column{{Name: "n", Type: store.TypeInt64}}, Values: []store.Column{{Name: "v", Type: store.TypeText}}}
	if err := st.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var batch []store.Mutation
	for i := range 100 {
		batch = append(batch, store.Mutation{Partition: []any{"a"}, Clustering: []any{int64(i)}, Cells: []store.Cell{{Column: "v", Value: fmt.Sprint(i)}}})
	}
	if err := st.Write(ctx, spec.Name, batch); err != nil {
		t.Fatal(err)
	}
	a, err := archive.New(archive.Options{Store: st, Open: s3target.Opener(s3target.Options{Client: c}), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	loc := "s3://" + bucket
	if _, err := a.ArchiveShard(ctx, loc, archive.Shard{Index: "ix", Table: spec.Name}); err != nil {
		t.Fatal(err)
	}
	key := aws.String("ix/" + spec.Name + ".parquet")
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, aws.ToInt64(out.ContentLength))
	if _, err := io.ReadFull(out.Body, b); err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	b[len(b)/2] ^= 0xFF
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: key, Body: bytes.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
	if err := st.DropTable(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, loc, "ix", spec.Name); !errors.Is(err, archive.ErrUnverified) {
		t.Fatalf("restore of a corrupt object: %v", err)
	}
	if _, err := st.Spec(ctx, spec.Name); !errors.Is(err, store.ErrTableNotFound) {
		t.Errorf("a refused restore left its table: %v", err)
	}
}

// TestPutInParts: an object larger than the part size is uploaded in
// parts (the last one shorter) and reads back byte for byte, and one no
// larger goes in one PutObject; each local file is gone afterwards.
func TestPutInParts(t *testing.T) {
	c, bucket := client(t)
	ctx := context.Background()
	const part = 5 << 20 // S3's smallest part
	tgt, err := s3target.Opener(s3target.Options{Client: c, PartSize: part})(ctx, "s3://"+bucket+"/parts")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{2*part + 12345, part} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i*7 + i/part)
		}
		path := filepath.Join(t.TempDir(), "object")
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("ev/%d.parquet", size)
		if err := tgt.Put(ctx, name, path); err != nil {
			t.Fatalf("put %d bytes: %v", size, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the local file is still there: %v", err)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("parts/" + name)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes put, %d read back (equal: %v), %v", size, len(got), bytes.Equal(got, want), err)
		}
		// A multipart object's ETag ends in the count of its parts.
		parts := strings.Contains(aws.ToString(out.ETag), "-")
		if parts != (size > part) {
			t.Errorf("%d bytes: ETag %s, want a multipart upload exactly above the part size", size, aws.ToString(out.ETag))
		}
	}
}

// Package s3target keeps archives (package archive) in Amazon S3 or an
// S3-compatible service, through aws-sdk-go-v2: s3://bucket/prefix
// locations. It is a package of its own so that only a program that opts
// in (cmd/ebb) links the S3 SDK; the root package opens file:// archives
// alone.
//
// Objects are written from the local file the archiver streamed the
// Parquet to, with one PutObject or, above Options.PartSize, a multipart
// upload (a PutObject takes at most 5 GiB); S3 makes either visible whole
// or not at all, so a reader never sees half an object. They are read
// with ranged GetObjects, and listed with ListObjectsV2.
package s3target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/store"
)

// Options configures the S3 client of an Opener.
type Options struct {
	// Endpoint, when set, is the S3 endpoint URL (an S3-compatible
	// service, or a local one in tests); empty means AWS's, from the
	// region.
	Endpoint string
	// Region; empty means the SDK's default chain (AWS_REGION, the
	// shared config), then us-east-1.
	Region string
	// PathStyle addresses buckets as endpoint/bucket instead of
	// bucket.endpoint, as most S3-compatible services need.
	PathStyle bool
	// Client, when set, is used as it is and the fields above are
	// ignored.
	Client *s3.Client
	// PartSize is the size of the parts of a multipart upload, which an
	// object larger than it is uploaded with; zero means
	// DefaultPartSize. S3 takes parts of 5 MiB to 5 GiB, at most 10,000
	// of them (Amazon S3 User Guide, "Amazon S3 multipart upload
	// limits"), so an object larger than 10,000 parts gets larger ones.
	PartSize int64
}

// DefaultPartSize is the part size of multipart uploads by default.
const DefaultPartSize = 64 << 20

// maxParts is the most parts S3 takes in one multipart upload.
const maxParts = 10_000

// Opener returns an archive.Opener for s3:// locations that also opens
// file:// ones (archive.OpenFile). The S3 client is made at the first
// s3:// location, with the SDK's default credential chain.
func Opener(opts Options) archive.Opener {
	var client *s3.Client
	return func(ctx context.Context, location string) (archive.Target, error) {
		if err := archive.CheckLocation(location); err != nil {
			return nil, err
		}
		u, _ := url.Parse(location)
		if u.Scheme == "file" {
			return archive.OpenFile(ctx, location)
		}
		if client == nil {
			c, err := newClient(ctx, opts)
			if err != nil {
				return nil, err
			}
			client = c
		}
		t, err := New(client, location)
		if err != nil {
			return nil, err
		}
		if opts.PartSize > 0 {
			t.partSize = opts.PartSize
		}
		return t, nil
	}
}

func newClient(ctx context.Context, opts Options) (*s3.Client, error) {
	if opts.Client != nil {
		return opts.Client, nil
	}
	var lo []func(*config.LoadOptions) error
	if opts.Region != "" {
		lo = append(lo, config.WithRegion(opts.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, store.Wrapf(store.ErrInvalid, err, "s3target: AWS configuration")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.PathStyle
	}), nil
}

// Target is an archive.Target in one bucket, under one prefix.
type Target struct {
	c              *s3.Client
	loc            string
	bucket, prefix string
	partSize       int64
}

// New returns the target of an s3://bucket/prefix location on client.
func New(client *s3.Client, location string) (*Target, error) {
	if err := archive.CheckLocation(location); err != nil {
		return nil, err
	}
	u, _ := url.Parse(location)
	if u.Scheme != "s3" {
		return nil, store.Errorf(archive.ErrLocation, "%q is not an s3:// location", location)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Target{c: client, loc: location, bucket: u.Host, prefix: prefix, partSize: DefaultPartSize}, nil
}

// Location is the target's URL.
func (t *Target) Location() string { return t.loc }

// TempDir is the system's: the object is uploaded from there.
func (t *Target) TempDir() string { return "" }

func (t *Target) key(name string) string { return t.prefix + name }

// Put uploads the file at path as the object name, with one PutObject up
// to the part size and a multipart upload above it, then removes the
// file.
func (t *Target) Put(ctx context.Context, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "s3target: put %s", name)
	}
	defer os.Remove(path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "s3target: put %s", name)
	}
	if fi.Size() > t.partSize {
		return t.putParts(ctx, name, f, fi.Size())
	}
	_, err = t.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(t.bucket), Key: aws.String(t.key(name)), Body: f, ContentLength: aws.Int64(fi.Size()),
	})
	if err != nil {
		return t.fault("put", name, err)
	}
	return nil
}

// putParts uploads the file f of size bytes as the object name in parts,
// read from the file one after another. An upload that fails is aborted,
// so that its parts are not kept (and billed); an abort that fails too
// leaves them to the bucket's lifecycle rule for incomplete uploads.
func (t *Target) putParts(ctx context.Context, name string, f *os.File, size int64) error {
	part := max(t.partSize, (size+maxParts-1)/maxParts)
	bucket, key := aws.String(t.bucket), aws.String(t.key(name))
	up, err := t.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: key})
	if err != nil {
		return t.fault("put", name, err)
	}
	done := false
	defer func() {
		if done {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = t.c.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: bucket, Key: key, UploadId: up.UploadId})
	}()
	var parts []types.CompletedPart
	for off, n := int64(0), int32(1); off < size; off, n = off+part, n+1 {
		l := min(part, size-off)
		out, err := t.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: key, UploadId: up.UploadId,
			PartNumber: aws.Int32(n), Body: io.NewSectionReader(f, off, l), ContentLength: aws.Int64(l)})
		if err != nil {
			return t.fault("put", name, err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	_, err = t.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		return t.fault("put", name, err)
	}
	done = true
	return nil
}

// PutBytes stores a small object.
func (t *Target) PutBytes(ctx context.Context, name string, b []byte) error {
	_, err := t.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(t.bucket), Key: aws.String(t.key(name)), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))),
	})
	if err != nil {
		return t.fault("put", name, err)
	}
	return nil
}

// Open heads the object; its reads are ranged GetObjects.
func (t *Target) Open(ctx context.Context, name string) (archive.Object, error) {
	out, err := t.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(t.key(name))})
	if err != nil {
		return nil, t.fault("open", name, err)
	}
	return &object{ctx: ctx, t: t, name: name, size: aws.ToInt64(out.ContentLength), etag: aws.ToString(out.ETag)}, nil
}

// Get reads a small object whole.
func (t *Target) Get(ctx context.Context, name string) ([]byte, error) {
	out, err := t.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(t.key(name))})
	if err != nil {
		return nil, t.fault("get", name, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, t.fault("get", name, err)
	}
	return b, nil
}

// List lists the objects under prefix, a page of ListObjectsV2 at a time.
func (t *Target) List(ctx context.Context, prefix string) ([]archive.ObjectInfo, error) {
	var out []archive.ObjectInfo
	p := s3.NewListObjectsV2Paginator(t.c, &s3.ListObjectsV2Input{Bucket: aws.String(t.bucket), Prefix: aws.String(t.key(prefix))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, t.fault("list", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, archive.ObjectInfo{Name: strings.TrimPrefix(aws.ToString(o.Key), t.prefix), Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

// fault says what failed: a missing object or bucket as
// archive.ErrObjectNotFound, anything else as a storage fault whose cause
// (the service's words) is logged.
func (t *Target) fault(op, name string, err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var api smithy.APIError
	if errors.As(err, &nsk) || errors.As(err, &nf) || (errors.As(err, &api) && api.ErrorCode() == "NotFound") {
		return store.Errorf(archive.ErrObjectNotFound, "%s in %s", name, t.loc)
	}
	if errors.As(err, &api) && api.ErrorCode() == "NoSuchBucket" {
		return store.Errorf(archive.ErrObjectNotFound, "no bucket %s (%s)", t.bucket, t.loc)
	}
	return store.Wrapf(store.ErrStorageFault, err, "s3target: %s %s in %s", op, name, t.loc)
}

// object reads one S3 object with ranged GetObjects, pinned to the ETag
// it was opened at, so that a replaced object fails the read instead of
// mixing two versions.
type object struct {
	ctx  context.Context
	t    *Target
	name string
	size int64
	etag string
}

func (o *object) Size() int64  { return o.size }
func (o *object) Close() error { return nil }

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), o.size) - 1
	in := &s3.GetObjectInput{Bucket: aws.String(o.t.bucket), Key: aws.String(o.t.key(o.name)), Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end))}
	if o.etag != "" {
		in.IfMatch = aws.String(o.etag)
	}
	out, err := o.t.c.GetObject(o.ctx, in)
	if err != nil {
		return 0, o.t.fault("read", o.name, err)
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p[:end-off+1])
	if err != nil {
		return n, o.t.fault("read", o.name, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

package archive

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Options configures an Archiver.
type Options struct {
	// Store holds the shards and ebb_meta. Required.
	Store store.Store
	// Open opens the target of an archive location; nil means OpenFile
	// (file:// only).
	Open Opener
	// TimeColumn names the clustering column whose range a manifest
	// records (an index shard's "ts"); "" records none.
	TimeColumn string
	// ProgressEvery is how many rows an export writes between two log
	// lines of its progress; zero means DefaultProgressEvery.
	ProgressEvery int64
	// RowGroupBytes bounds what an export holds in memory: once the
	// Parquet writer's buffered rows reach about that many bytes (its
	// own estimate, before compression) they are written out as a row
	// group. Zero means DefaultRowGroupBytes.
	RowGroupBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the archive metrics; nil keeps them unexported.
	Registerer prometheus.Registerer
}

// DefaultProgressEvery is how many rows an export writes between two
// progress lines of its log by default.
const DefaultProgressEvery = 1_000_000

// DefaultRowGroupBytes is the size at which an export writes out a row
// group by default. The Parquet writer buffers a row group whole until it
// is flushed, so without a bound a shard's whole object would sit in
// memory until the end of its export.
const DefaultRowGroupBytes = 32 << 20

// Archiver archives shards before their drop, lists archives and
// restores them. It is safe for concurrent use.
type Archiver struct {
	opts    Options
	open    Opener
	now     func() time.Time
	log     *slog.Logger
	metrics *metrics
}

// New returns an Archiver.
func New(opts Options) (*Archiver, error) {
	if opts.Store == nil {
		return nil, errors.New("archive: Options.Store is required")
	}
	a := &Archiver{opts: opts, open: opts.Open, now: opts.Now, log: opts.Logger, metrics: newMetrics()}
	if a.open == nil {
		a.open = OpenFile
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.opts.ProgressEvery <= 0 {
		a.opts.ProgressEvery = DefaultProgressEvery
	}
	if a.opts.RowGroupBytes <= 0 {
		a.opts.RowGroupBytes = DefaultRowGroupBytes
	}
	if opts.Registerer != nil {
		if err := a.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("archive: register metrics: %w", err)
		}
	}
	return a, nil
}

// ManifestVersion is the version of the manifest format.
const ManifestVersion = 1

// Manifest describes one archived shard. It is written after the object
// was verified, and only a manifest with Verified set lets the shard go.
type Manifest struct {
	Version int `json:"version"`
	// Index and Table name the shard; Start and End bound its time range
	// as the shard manager knows it.
	Index string    `json:"index"`
	Table string    `json:"table"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Object is the Parquet object's name in the target, Location its
	// URL.
	Object   string `json:"object"`
	Location string `json:"location"`
	// Rows is the row count; Bytes the object's size.
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
	// MinTime and MaxTime are the range of Options.TimeColumn over the
	// rows; zero with no rows or no time column.
	MinTime time.Time `json:"min_time,omitzero"`
	MaxTime time.Time `json:"max_time,omitzero"`
	// Schema is the table's spec, which a restore creates the table with.
	Schema Schema `json:"schema"`
	// Columns is the Parquet schema, one "name type" per column.
	Columns []string `json:"columns"`
	// ObjectSHA256 is the checksum of the object's bytes; RowsSHA256 of
	// its rows (see the package comment), equal to the table's.
	ObjectSHA256 string `json:"object_sha256"`
	RowsSHA256   string `json:"rows_sha256"`
	// ArchivedAt is when the export began; Verified when the object was
	// read back and matched.
	ArchivedAt time.Time `json:"archived_at"`
	Verified   time.Time `json:"verified_at"`
}

// Names of a shard's objects.
func objectName(index, table string) string   { return index + "/" + table + ".parquet" }
func manifestName(index, table string) string { return index + "/" + table + ".manifest.json" }

const manifestSuffix = ".manifest.json"

// Shard names the shard to archive.
type Shard struct {
	Index, Table string
	Start, End   time.Time
}

// ObjectURL is the URL of the archive's Parquet object: its location and
// its name there. The manifest sits beside it (SHARD.manifest.json).
func (m Manifest) ObjectURL() string {
	return strings.TrimSuffix(m.Location, "/") + "/" + m.Object
}

// ArchiveShard makes sure the shard has a verified archive at location,
// exporting and verifying it unless a verified manifest is already there
// and its object still reads back as it says, and returns that manifest. A nil error means the shard
// may be dropped; any error says why it may not (the shard manager holds
// the drop and reports it). It is idempotent: an object without a
// verified manifest, left by an archive killed half-way, is written again.
func (a *Archiver) ArchiveShard(ctx context.Context, location string, sh Shard) (Manifest, error) {
	if err := a.CheckNotRestored(ctx, sh.Table); err != nil {
		return Manifest{}, err
	}
	t, err := a.open(ctx, location)
	if err != nil {
		return Manifest{}, a.fail(sh, err)
	}
	if m, err := readManifest(ctx, t, sh.Index, sh.Table); err == nil && !m.Verified.IsZero() {
		// The object is read back again before the drop it allows: it may
		// have changed since it was verified. The shard's rows cannot
		// (writes past retention are refused), so matching the manifest
		// is matching the table.
		err := a.verify(ctx, t, m)
		if err == nil {
			return m, nil
		}
		a.log.Warn("archived object no longer matches its manifest; archiving again", "index", sh.Index, "table", sh.Table, "location", location, "err", err)
	}
	start := a.now()
	m, err := a.export(ctx, t, sh)
	if err != nil {
		return Manifest{}, a.fail(sh, err)
	}
	if err := a.verify(ctx, t, m); err != nil {
		return Manifest{}, a.fail(sh, err)
	}
	m.Verified = a.now()
	doc, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, a.fail(sh, fmt.Errorf("archive: encode manifest: %w", err))
	}
	if err := t.PutBytes(ctx, manifestName(sh.Index, sh.Table), doc); err != nil {
		return Manifest{}, a.fail(sh, err)
	}
	took := a.now().Sub(start)
	a.metrics.archived.Inc()
	a.metrics.bytes.Add(float64(m.Bytes))
	a.log.Info("shard archived and verified", "index", sh.Index, "table", sh.Table, "location", m.Location, "object", m.Object,
		"rows", m.Rows, "bytes", m.Bytes, "took", took)
	return m, nil
}

func (a *Archiver) fail(sh Shard, err error) error {
	a.metrics.failures.Inc()
	a.log.Warn("archive of shard failed; its drop is held", "index", sh.Index, "table", sh.Table, "err", err)
	return err
}

// export writes the shard's rows to a local file, partition after
// partition, page after page, and Puts it as the object.
func (a *Archiver) export(ctx context.Context, t Target, sh Shard) (Manifest, error) {
	st := a.opts.Store
	lister, ok := store.As[store.PartitionLister](st)
	if !ok {
		return Manifest{}, ErrNoPartitionLister
	}
	spec, err := st.Spec(ctx, sh.Table)
	if err != nil {
		return Manifest{}, fmt.Errorf("archive: spec of %s: %w", sh.Table, err)
	}
	l, err := newLayout(spec)
	if err != nil {
		return Manifest{}, err
	}
	tc := -1
	for i, c := range spec.Clustering {
		if c.Name == a.opts.TimeColumn && c.Type == store.TypeTimestamp {
			tc = len(spec.PartitionKey) + i
		}
	}
	m := Manifest{
		Version: ManifestVersion, Index: sh.Index, Table: sh.Table, Start: sh.Start.UTC(), End: sh.End.UTC(),
		Object: objectName(sh.Index, sh.Table), Location: t.Location(), Schema: schemaOf(spec), ArchivedAt: a.now().UTC(),
	}
	for _, c := range l.cols {
		m.Columns = append(m.Columns, c.Name+" "+c.Type.String())
	}
	// A process killed mid-export leaves its temporary file behind; the
	// shard is archived by one process at a time (the shard manager's
	// lease), so the files of its earlier exports can go (should another
	// process export it at the same moment, its Put fails, and its next
	// pass tries again).
	if old, _ := filepath.Glob(filepath.Join(cmp.Or(t.TempDir(), os.TempDir()), ".tmp-"+sh.Table+"-*.parquet")); len(old) > 0 {
		for _, p := range old {
			_ = os.Remove(p)
		}
		a.log.Info("removed the temporary files of an interrupted archive", "index", sh.Index, "table", sh.Table, "files", len(old))
	}
	f, err := os.CreateTemp(t.TempDir(), ".tmp-"+sh.Table+"-*.parquet")
	if err != nil {
		return Manifest{}, store.Wrapf(store.ErrStorageFault, err, "archive: cannot write the object of %s to %s", sh.Table, t.Location())
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once Put moved it
	defer f.Close()
	objHash := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, objHash)}
	w := parquet.NewWriter(cw, l.schema, parquet.Compression(&parquet.Zstd))
	rows := newRowHash()
	// Rows go to the writer a page at a time, in a buffer reused from
	// page to page.
	var prows []parquet.Row
	vals := make([]any, 0, len(l.cols))
	nextLog := a.opts.ProgressEvery
	var after []byte
	for {
		var parts [][]any
		after, err = lister.Partitions(ctx, sh.Table, after, 1000, func(p []any) error {
			parts = append(parts, p)
			return nil
		})
		if err != nil {
			return Manifest{}, fmt.Errorf("archive: list partitions of %s: %w", sh.Table, err)
		}
		for _, p := range parts {
			var token []byte
			for {
				page, err := kit.Query(ctx, st, sh.Table, store.Query{Partition: p, Limit: store.MaxLimit, PageToken: token})
				if err != nil {
					return Manifest{}, fmt.Errorf("archive: read %s: %w", sh.Table, err)
				}
				prows = prows[:0]
				for i, r := range page.Rows {
					vals = append(append(append(vals[:0], r.Partition...), r.Clustering...), r.Values...)
					rows.add(vals)
					if i < cap(prows) {
						prows = prows[:i+1]
					} else {
						prows = append(prows, nil)
					}
					prows[i] = l.row(prows[i], vals)
					if tc >= 0 {
						ts := vals[tc].(time.Time)
						if m.MinTime.IsZero() || ts.Before(m.MinTime) {
							m.MinTime = ts
						}
						if ts.After(m.MaxTime) {
							m.MaxTime = ts
						}
					}
				}
				// A page goes to the writer a few hundred rows at a time,
				// and the row group is written out once its buffer (Size
				// less what was written) reaches RowGroupBytes.
				for chunk := range slices.Chunk(prows, 256) {
					if _, err := w.WriteRows(chunk); err != nil {
						return Manifest{}, store.Wrapf(store.ErrStorageFault, err, "archive: write %s", sh.Table)
					}
					if w.Size()-cw.n >= a.opts.RowGroupBytes {
						if err := w.Flush(); err != nil {
							return Manifest{}, store.Wrapf(store.ErrStorageFault, err, "archive: write %s", sh.Table)
						}
					}
				}
				m.Rows += int64(len(page.Rows))
				a.metrics.rows.Add(float64(len(page.Rows)))
				if m.Rows >= nextLog {
					a.log.Info("archiving shard", "index", sh.Index, "table", sh.Table, "rows_written", m.Rows, "bytes_written", cw.n)
					nextLog += a.opts.ProgressEvery
				}
				token = page.NextPageToken
				if token == nil {
					break
				}
			}
		}
		if after == nil {
			break
		}
	}
	if err := w.Close(); err != nil {
		return Manifest{}, store.Wrapf(store.ErrStorageFault, err, "archive: write %s", sh.Table)
	}
	if err := f.Close(); err != nil {
		return Manifest{}, store.Wrapf(store.ErrStorageFault, err, "archive: write %s", sh.Table)
	}
	m.Bytes = cw.n
	m.ObjectSHA256 = hex.EncodeToString(objHash.Sum(nil))
	m.RowsSHA256 = hex.EncodeToString(rows.sum())
	if err := t.Put(ctx, m.Object, tmp); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// verify reads the object back: its bytes must hash to m.ObjectSHA256
// and its rows, decoded, must be m.Rows and hash to m.RowsSHA256, the
// table's.
func (a *Archiver) verify(ctx context.Context, t Target, m Manifest) error {
	o, sum, err := fetch(ctx, t, m.Object)
	if err != nil {
		return err
	}
	defer o.Close()
	if o.Size() != m.Bytes {
		return store.Errorf(ErrUnverified, "object %s in %s has %d bytes, %d were written", m.Object, m.Location, o.Size(), m.Bytes)
	}
	if got := hex.EncodeToString(sum); got != m.ObjectSHA256 {
		return store.Errorf(ErrUnverified, "object %s in %s has checksum %s, %s was written", m.Object, m.Location, got, m.ObjectSHA256)
	}
	n, rsum, err := readRows(o, m.Schema.spec(m.Table), nil)
	if err != nil {
		return err
	}
	if n != m.Rows {
		return store.Errorf(ErrUnverified, "object %s in %s holds %d rows, the table %d", m.Object, m.Location, n, m.Rows)
	}
	if got := hex.EncodeToString(rsum); got != m.RowsSHA256 {
		return store.Errorf(ErrUnverified, "the rows of object %s in %s have checksum %s, the table's %s", m.Object, m.Location, got, m.RowsSHA256)
	}
	return nil
}

// localObject marks an object that is a local file, which Parquet reads
// in place.
type localObject interface {
	Object
	local()
}

func (fileObject) local() {}

// fetch opens an object for reading rows and returns the checksum of its
// bytes. An object that is not a local file (S3's) is streamed once into
// a temporary file, hashing it on the way, since Parquet's reader makes
// many small reads that would each be a request; the temporary file goes
// when the returned object is closed.
func fetch(ctx context.Context, t Target, name string) (Object, []byte, error) {
	o, err := t.Open(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	h := sha256.New()
	buf := make([]byte, 4<<20)
	if _, ok := o.(localObject); ok {
		if _, err := io.CopyBuffer(h, io.NewSectionReader(o, 0, o.Size()), buf); err != nil {
			o.Close()
			return nil, nil, store.Wrapf(store.ErrStorageFault, err, "archive: read back %s", name)
		}
		return o, h.Sum(nil), nil
	}
	defer o.Close()
	f, err := os.CreateTemp("", ".tmp-archive-*")
	if err != nil {
		return nil, nil, store.Wrapf(store.ErrStorageFault, err, "archive: temporary file for %s", name)
	}
	os.Remove(f.Name()) // unlinked: gone with the last close
	if _, err := io.CopyBuffer(io.MultiWriter(f, h), io.NewSectionReader(o, 0, o.Size()), buf); err != nil {
		f.Close()
		return nil, nil, store.Wrapf(store.ErrStorageFault, err, "archive: read back %s", name)
	}
	return fileObject{File: f, size: o.Size()}, h.Sum(nil), nil
}

// readRows reads every row of a Parquet object of spec, a row group at a
// time, and returns the count and rows checksum; fn, when set, sees each
// row's values in spec order.
func readRows(o Object, spec store.TableSpec, fn func(vals []any) error) (int64, []byte, error) {
	l, err := newLayout(spec)
	if err != nil {
		return 0, nil, err
	}
	f, err := parquet.OpenFile(o, o.Size())
	if err != nil {
		return 0, nil, store.Wrapf(ErrUnverified, err, "the object is not a readable Parquet file")
	}
	rh := newRowHash()
	var n int64
	buf := make([]parquet.Row, 256)
	var vals []any
	for _, rg := range f.RowGroups() {
		rr := rg.Rows()
		for {
			k, err := rr.ReadRows(buf)
			for _, r := range buf[:k] {
				if vals, err = l.values(r, vals); err != nil {
					rr.Close()
					return 0, nil, err
				}
				rh.add(vals)
				n++
				if fn != nil {
					if err := fn(vals); err != nil {
						rr.Close()
						return 0, nil, err
					}
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rr.Close()
				return 0, nil, store.Wrapf(ErrUnverified, err, "the object's rows cannot be read")
			}
		}
		rr.Close()
	}
	return n, rh.sum(), nil
}

func readManifest(ctx context.Context, t Target, index, table string) (Manifest, error) {
	b, err := t.Get(ctx, manifestName(index, table))
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, store.Wrapf(ErrUnverified, err, "manifest of %s is corrupt", table)
	}
	return m, nil
}

// List returns the manifests of an index's archives at location, oldest
// shard first.
func (a *Archiver) List(ctx context.Context, location, index string) ([]Manifest, error) {
	t, err := a.open(ctx, location)
	if err != nil {
		return nil, err
	}
	objs, err := t.List(ctx, index+"/")
	if err != nil {
		return nil, err
	}
	out := []Manifest{}
	for _, o := range objs {
		if !strings.HasSuffix(o.Name, manifestSuffix) {
			continue
		}
		table := strings.TrimSuffix(strings.TrimPrefix(o.Name, index+"/"), manifestSuffix)
		m, err := readManifest(ctx, t, index, table)
		if err != nil {
			a.log.Warn("archive manifest unreadable; left out of the listing", "location", location, "object", o.Name, "err", err)
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// ReadRows reads an archived shard's rows back from its object, in the
// order they were archived, handing fn each row's values in the order of
// the manifest's schema (partition key, clustering, values; nil for an
// absent value). The values are fn's to keep.
func (a *Archiver) ReadRows(ctx context.Context, m Manifest, fn func(vals []any) error) error {
	t, err := a.open(ctx, m.Location)
	if err != nil {
		return err
	}
	o, _, err := fetch(ctx, t, m.Object)
	if err != nil {
		return err
	}
	defer o.Close()
	_, _, err = readRows(o, m.Schema.spec(m.Table), func(vals []any) error { return fn(append([]any(nil), vals...)) })
	return err
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ebb-data/ebb/store"
)

// Errors of the package.
var (
	// ErrObjectNotFound: the target holds no object of that name.
	ErrObjectNotFound = store.Mark(store.ErrNotFound, "archive", "no such object")
	// ErrLocation: an archive location that is no URL of a known scheme.
	ErrLocation = store.Mark(store.ErrInvalid, "archive", "invalid archive location")
	// ErrUnverified: an archive whose object does not match its table or
	// its manifest. The drop of its shard is held.
	ErrUnverified = store.Mark(nil, "archive", "archive not verified")
	// ErrNotArchived: no archive of that shard.
	ErrNotArchived = store.Mark(store.ErrNotFound, "archive", "no archive of that shard")
	// ErrRestored: the shard is restored from its archive, so its drop is
	// held until it is released.
	ErrRestored = store.Mark(nil, "archive", "shard restored from its archive")
	// ErrNoPartitionLister: the backend cannot list a table's partitions,
	// so a shard cannot be read whole.
	ErrNoPartitionLister = store.Mark(store.ErrInvalid, "archive", "the backend cannot list a table's partitions, so it cannot archive")
)

// Object is one object of a target, opened for reading.
type Object interface {
	io.ReaderAt
	io.Closer
	// Size is the object's length in bytes.
	Size() int64
}

// ObjectInfo is one object listed.
type ObjectInfo struct {
	Name string
	Size int64
}

// Target is where archives are kept. Object names are relative paths
// ("events/events_1719446400.parquet"); the target adds its own prefix.
type Target interface {
	// Location is the target's URL, as configured.
	Location() string
	// TempDir is where the archiver best writes the local file Put takes
	// (the file target's own directory, so that Put is a rename); ""
	// means the system's temporary directory.
	TempDir() string
	// Put stores the local file at path as the object name, replacing
	// any object of that name, so that a reader sees either the old
	// object or the new one whole. The file is Put's afterwards: it may
	// move or remove it.
	Put(ctx context.Context, name, path string) error
	// PutBytes stores a small object (a manifest) as Put does.
	PutBytes(ctx context.Context, name string, b []byte) error
	// Open opens an object; ErrObjectNotFound when there is none.
	Open(ctx context.Context, name string) (Object, error)
	// Get reads a small object whole; ErrObjectNotFound when there is
	// none.
	Get(ctx context.Context, name string) ([]byte, error)
	// List lists the objects whose names start with prefix, sorted by
	// name.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// Opener opens the target of an archive location.
type Opener func(ctx context.Context, location string) (Target, error)

// CheckLocation checks that location is an archive URL of a scheme the
// package knows: file:///ABSOLUTE/DIR or s3://bucket[/prefix]. It does not
// reach the target.
func CheckLocation(location string) error {
	u, err := url.Parse(location)
	if err != nil {
		return store.Errorf(ErrLocation, "%q: %s", location, err.Error())
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return store.Errorf(ErrLocation, "%q: a file URL names a local directory: file:///DIR", location)
		}
		if !path.IsAbs(u.Path) || u.RawQuery != "" {
			return store.Errorf(ErrLocation, "%q: a file URL names an absolute directory: file:///DIR", location)
		}
	case "s3":
		if u.Host == "" || u.RawQuery != "" {
			return store.Errorf(ErrLocation, "%q: an S3 URL names a bucket: s3://bucket/prefix", location)
		}
	default:
		return store.Errorf(ErrLocation, "%q: the scheme must be file or s3", location)
	}
	return nil
}

// OpenFile is the Opener of file:// locations, the one every process has;
// other schemes are refused with ErrLocation (cmd/ebb adds S3 with
// package archive/s3).
func OpenFile(_ context.Context, location string) (Target, error) {
	if err := CheckLocation(location); err != nil {
		return nil, err
	}
	u, _ := url.Parse(location)
	if u.Scheme != "file" {
		return nil, store.Errorf(ErrLocation, "%q: this process opens file:// archives only", location)
	}
	return &fileTarget{loc: location, dir: filepath.FromSlash(u.Path)}, nil
}

// fileTarget keeps objects as files under dir.
type fileTarget struct {
	loc, dir string
}

func (t *fileTarget) Location() string { return t.loc }

func (t *fileTarget) TempDir() string {
	// Best effort: a directory that cannot be made fails Put with the
	// cause, where the caller reports it.
	_ = os.MkdirAll(t.dir, 0o755)
	return t.dir
}

func (t *fileTarget) path(name string) (string, error) {
	clean := path.Clean(name)
	if clean != name || path.IsAbs(name) || strings.HasPrefix(clean, "..") {
		return "", store.Errorf(store.ErrInvalid, "archive: object name %q", name)
	}
	return filepath.Join(t.dir, filepath.FromSlash(name)), nil
}

func (t *fileTarget) Put(_ context.Context, name, src string) error {
	dst, err := t.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "archive: put %s", name)
	}
	f, err := os.Open(src)
	if err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "archive: put %s", name)
	}
	err = f.Sync()
	f.Close()
	if err == nil {
		err = os.Rename(src, dst)
	}
	if err == nil {
		err = syncDir(filepath.Dir(dst))
	}
	if err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "archive: put %s", name)
	}
	return nil
}

func (t *fileTarget) PutBytes(ctx context.Context, name string, b []byte) error {
	dst, err := t.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "archive: put %s", name)
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "archive: put %s", name)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return store.Wrapf(store.ErrStorageFault, err, "archive: put %s", name)
	}
	return t.Put(ctx, name, f.Name())
}

type fileObject struct {
	*os.File
	size int64
}

func (o fileObject) Size() int64 { return o.size }

func (t *fileTarget) Open(_ context.Context, name string) (Object, error) {
	p, err := t.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, store.Errorf(ErrObjectNotFound, "%s in %s", name, t.loc)
	}
	if err != nil {
		return nil, store.Wrapf(store.ErrStorageFault, err, "archive: open %s", name)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, store.Wrapf(store.ErrStorageFault, err, "archive: open %s", name)
	}
	return fileObject{File: f, size: fi.Size()}, nil
}

func (t *fileTarget) Get(ctx context.Context, name string) ([]byte, error) {
	o, err := t.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	b, err := io.ReadAll(io.NewSectionReader(o, 0, o.Size()))
	if err != nil {
		return nil, store.Wrapf(store.ErrStorageFault, err, "archive: read %s", name)
	}
	return b, nil
}

func (t *fileTarget) List(_ context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := filepath.WalkDir(t.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		rel, err := filepath.Rel(t.dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, ObjectInfo{Name: name, Size: fi.Size()})
		return nil
	})
	if err != nil {
		return nil, store.Wrapf(store.ErrStorageFault, err, "archive: list %s", t.loc)
	}
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

package pebble

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ManifestName is the file in which Checkpoint lists a checkpoint's files.
// Pebble ignores it: its name is none of Pebble's.
const ManifestName = "EBB-CHECKPOINT.json"

// ErrDamaged: a checkpoint (a backup) is not what was written: a file is
// missing, has another size or content than its manifest says, or an
// sstable block fails its checksum. The message names the file.
var ErrDamaged = errors.New("pebble: checkpoint damaged")

// ErrNoManifest: a checkpoint has no manifest (ManifestName), as those
// taken before ebb wrote one; its write-ahead log cannot be checked.
var ErrNoManifest = errors.New("pebble: checkpoint has no manifest")

// manifest is a checkpoint's list of files.
type manifest struct {
	// Format is 1.
	Format int            `json:"format"`
	Files  []manifestFile `json:"files"`
}

type manifestFile struct {
	// Name is the file's path relative to the checkpoint, with slashes.
	Name string `json:"name"`
	Size int64  `json:"size"`
	// SHA256 is the hex SHA-256 of the file's content; empty for an
	// sstable, whose blocks carry checksums that VerifyCheckpoint checks
	// (hashing every sstable at backup time would read the whole store).
	SHA256 string `json:"sha256,omitempty"`
}

func isSSTable(name string) bool { return strings.HasSuffix(name, ".sst") }

// writeManifest lists the files under dir, writes the list into dir's
// ManifestName, syncs it and dir, and returns the bytes of every file.
func writeManifest(fs vfs.FS, dir string) (int64, error) {
	names, err := listFiles(fs, dir)
	if err != nil {
		return 0, err
	}
	m := manifest{Format: 1}
	var total int64
	for _, name := range names {
		f := manifestFile{Name: name}
		if f.Size, f.SHA256, err = fileDigest(fs, fs.PathJoin(dir, name), !isSSTable(name)); err != nil {
			return 0, err
		}
		total += f.Size
		m.Files = append(m.Files, f)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return 0, err
	}
	tmp := fs.PathJoin(dir, ManifestName+".tmp")
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := fs.Rename(tmp, fs.PathJoin(dir, ManifestName)); err != nil {
		return 0, err
	}
	d, err := fs.OpenDir(dir)
	if err != nil {
		return 0, err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return 0, err
	}
	return total + int64(len(b)), d.Close()
}

// listFiles returns the regular files under dir, as slash-separated paths
// relative to it, sorted, leaving out the manifest.
func listFiles(fs vfs.FS, dir string) ([]string, error) {
	var out []string
	var walk func(rel string) error
	walk = func(rel string) error {
		names, err := fs.List(fs.PathJoin(dir, rel))
		if err != nil {
			return err
		}
		for _, name := range names {
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			info, err := fs.Stat(fs.PathJoin(dir, r))
			if err != nil {
				return err
			}
			switch {
			case info.IsDir():
				if err := walk(r); err != nil {
					return err
				}
			case r != ManifestName && r != ManifestName+".tmp":
				out = append(out, r)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// fileDigest returns the size of the file at path and, with hash, the hex
// SHA-256 of its content.
func fileDigest(fs vfs.FS, path string, hash bool) (int64, string, error) {
	if !hash {
		info, err := fs.Stat(path)
		if err != nil {
			return 0, "", err
		}
		return info.Size(), "", nil
	}
	f, err := fs.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// VerifyOptions tells VerifyCheckpoint what to accept.
type VerifyOptions struct {
	// NoManifest accepts a checkpoint without a manifest, checking only
	// its sstables' block checksums: a missing or truncated write-ahead
	// log then goes unnoticed. By default such a checkpoint is refused
	// with ErrNoManifest.
	NoManifest bool
}

// VerifyCheckpoint checks the checkpoint in dir, on the operating system's
// file system, without opening it: every file its manifest lists is there
// with the size (and, but for sstables, the SHA-256) it lists, no file it
// does not list is there, and every block of every sstable matches its
// checksum. It returns an error wrapping ErrDamaged that names the first
// bad file, or ErrNoManifest, and the files it checked.
func VerifyCheckpoint(ctx context.Context, dir string, o VerifyOptions) ([]string, error) {
	fs := vfs.Default
	names, err := listFiles(fs, dir)
	if err != nil {
		return nil, fmt.Errorf("pebble: verify %s: %w", dir, err)
	}
	b, err := os.ReadFile(fs.PathJoin(dir, ManifestName))
	switch {
	case errors.Is(err, os.ErrNotExist) && o.NoManifest:
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s lacks %s (taken before ebb wrote one?): a missing or truncated write-ahead log could not be told", ErrNoManifest, dir, ManifestName)
	case err != nil:
		return nil, fmt.Errorf("pebble: verify %s: %w", dir, err)
	default:
		var m manifest
		if err := json.Unmarshal(b, &m); err != nil || m.Format != 1 {
			return nil, fmt.Errorf("%w: %s: unreadable (%v, format %d)", ErrDamaged, ManifestName, err, m.Format)
		}
		if err := checkListed(ctx, fs, dir, names, m); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		if !isSSTable(name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := checkSSTable(ctx, fs, fs.PathJoin(dir, name)); err != nil {
			return nil, fmt.Errorf("%w: sstable %s: %v", ErrDamaged, name, err)
		}
	}
	return names, nil
}

// checkListed compares the files under dir with the manifest's list.
func checkListed(ctx context.Context, fs vfs.FS, dir string, names []string, m manifest) error {
	listed := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		listed[f.Name] = true
		size, sum, err := fileDigest(fs, fs.PathJoin(dir, f.Name), f.SHA256 != "")
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%w: %s is missing (the manifest lists it with %d bytes)", ErrDamaged, f.Name, f.Size)
		case err != nil:
			return fmt.Errorf("%w: %s: %v", ErrDamaged, f.Name, err)
		case size != f.Size:
			return fmt.Errorf("%w: %s has %d bytes, the manifest says %d (truncated or overwritten)", ErrDamaged, f.Name, size, f.Size)
		case sum != f.SHA256:
			return fmt.Errorf("%w: %s: SHA-256 %s, the manifest says %s", ErrDamaged, f.Name, sum, f.SHA256)
		}
	}
	for _, name := range names {
		if !listed[name] {
			return fmt.Errorf("%w: %s is not in the manifest: the backup holds a file it was not written with", ErrDamaged, name)
		}
	}
	return nil
}

// checkSSTable reads every block of the sstable at path and checks it
// against its checksum.
func checkSSTable(ctx context.Context, fs vfs.FS, path string) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return err
	}
	r, err := sstable.NewReader(ctx, readable, sstable.ReaderOptions{Merger: rowMerger})
	if err != nil {
		readable.Close()
		return err
	}
	verr := r.ValidateBlockChecksums()
	// Closing the reader closes the readable and the file.
	if err := r.Close(); verr == nil {
		verr = err
	}
	return verr
}

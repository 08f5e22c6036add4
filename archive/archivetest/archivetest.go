// Package archivetest holds what tests of archives share: a target that
// fails as a bad disk or a killed process would, wrapped around a real
// one (a directory or a bucket), so that the shard manager's handling of
// a failed archive is tested the same way on every target.
package archivetest

import (
	"context"
	"errors"
	"os"
	"sync/atomic"

	"github.com/ebb-data/ebb/archive"
)

// Faults are the faults a Faulty target injects; a test sets them while
// the archiver runs.
type Faults struct {
	// Corrupt, while set, flips one byte of each object before it is
	// Put, after the archiver hashed it: the object no longer reads back
	// as written.
	Corrupt atomic.Bool
	// KillManifests fails that many manifest writes, as a process killed
	// between its object and its manifest would.
	KillManifests atomic.Int32
}

// Opener returns an opener of the targets open opens, each wrapped to
// inject f.
func Opener(open archive.Opener, f *Faults) archive.Opener {
	return func(ctx context.Context, location string) (archive.Target, error) {
		t, err := open(ctx, location)
		if err != nil {
			return nil, err
		}
		return faulty{Target: t, f: f}, nil
	}
}

type faulty struct {
	archive.Target
	f *Faults
}

func (t faulty) Put(ctx context.Context, name, path string) error {
	if t.f.Corrupt.Load() {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b[len(b)/2] ^= 0xFF
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	return t.Target.Put(ctx, name, path)
}

func (t faulty) PutBytes(ctx context.Context, name string, b []byte) error {
	if t.f.KillManifests.Add(-1) >= 0 {
		return errors.New("killed before the manifest")
	}
	return t.Target.PutBytes(ctx, name, b)
}

package pebble

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

// TestRecoverableOnlyForENOSPCBeforeSync: only a write or a file creation
// refused for want of space lets the store reopen without a restart; a
// failed sync stays latched whatever its errno (fsyncgate), and so does an
// ENOSPC that does not say which operation failed.
func TestRecoverableOnlyForENOSPCBeforeSync(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("pebble: log writer: %w", err) }
	for _, c := range []struct {
		err  error
		want bool
	}{
		{wrap(&fs.PathError{Op: "write", Path: "000007.log", Err: syscall.ENOSPC}), true},
		{wrap(&fs.PathError{Op: "open", Path: "000008.log", Err: syscall.ENOSPC}), true},
		{wrap(&fs.PathError{Op: "fallocate", Path: "000008.log", Err: syscall.ENOSPC}), true},
		{wrap(&fs.PathError{Op: "sync", Path: "000007.log", Err: syscall.ENOSPC}), false},
		{wrap(&fs.PathError{Op: "fdatasync", Path: "000007.log", Err: syscall.ENOSPC}), false},
		{wrap(&fs.PathError{Op: "write", Path: "000007.log", Err: syscall.EIO}), false},
		{wrap(syscall.ENOSPC), false},
		{errors.New("no space left on device"), false},
	} {
		if got := recoverable(c.err); got != c.want {
			t.Errorf("recoverable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

//go:build unix

package server

import "syscall"

// openFileLimit returns the process's limit of open files (the soft one,
// which Go raises to the hard one at start-up), or 0 when unknown.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur) //nolint:unconvert // int64 on some systems
}

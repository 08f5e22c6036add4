//go:build !unix

package server

// openFileLimit returns 0: the limit is not known here, and
// DefaultMaxConns takes its ceiling.
func openFileLimit() uint64 { return 0 }

//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// allocatedBytes is the space a file takes on disk, as du counts it: its
// allocated blocks, so that a preallocated file counts in full.
func allocatedBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}

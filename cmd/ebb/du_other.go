//go:build !unix

package main

import "io/fs"

// allocatedBytes is the space a file takes on disk; without block counts,
// its size.
func allocatedBytes(info fs.FileInfo) int64 { return info.Size() }

//go:build !unix

package peers

import "io/fs"

// allocated is the space a file takes on disk; without block counts, its
// size.
func allocated(info fs.FileInfo) int64 { return info.Size() }

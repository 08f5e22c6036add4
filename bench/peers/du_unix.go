//go:build unix

package peers

import (
	"io/fs"
	"syscall"
)

// allocated is the space a file takes on disk: its allocated blocks.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}

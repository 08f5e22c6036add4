//go:build !linux

package main

// machineMemory is unknown here: --memory-limit auto sets no limit, and a
// share needs a size instead.
func machineMemory() int64 { return 0 }

//go:build !linux

package main

// nofileVar names the variable that makes the test binary a helper process
// lowering its open-file limit, on Linux only.
const nofileVar = "EBB_TEST_RLIMIT_NOFILE"

func execWithNofile(string) { panic(nofileVar + " is honoured on Linux only") }

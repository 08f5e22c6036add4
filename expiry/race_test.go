//go:build race

package expiry

// raceEnabled is true under the race detector, which also turns on Pebble's
// invariant checks (a stack trace captured per sstable iterator, so per
// conditional delete): real-time throughput tests scale down under it.
const raceEnabled = true

// Package pairbench measures one operation on two sides, a baseline and a
// variant, inside one benchmark: it alternates short chunks of each, so
// that both see the same machine from one millisecond to the next, and
// reports the variant's time over the baseline's as the median of the
// chunk pairs. On a shared, noisy machine that ratio holds still where two
// benchmarks run one after the other drift apart.
package pairbench

import (
	"slices"
	"testing"
	"time"
)

// Chunk is how many operations one side runs before the other takes over:
// long enough for the clock's resolution, short enough that a burst of
// load from elsewhere on the machine hits both sides alike.
const Chunk = 256

// Run times base and variant in alternating chunks of Chunk operations
// for b.N operations in all, and reports base-ns/op, variant-ns/op (with
// the units named after the sides) and the ratio variant/base. Each
// operation's argument counts the calls made on that side, from 0.
func Run(b *testing.B, baseName, variantName string, base, variant func(i int)) {
	b.Helper()
	var tb, tv time.Duration
	var ratios []float64
	i := 0
	// chunk runs one chunk of op and returns how long it took.
	chunk := func(op func(int)) time.Duration {
		start := time.Now()
		for j := range Chunk {
			op(i + j)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for n := 0; n < b.N || n == 0; n += 2 * Chunk {
		// Alternate which side goes first, so that neither always runs
		// on the other's warm caches.
		var db, dv time.Duration
		if n/(2*Chunk)%2 == 0 {
			db, dv = chunk(base), chunk(variant)
		} else {
			dv, db = chunk(variant), chunk(base)
		}
		i += Chunk
		tb, tv = tb+db, tv+dv
		ratios = append(ratios, float64(dv)/float64(db))
	}
	slices.Sort(ratios)
	ops := float64(i)
	b.ReportMetric(float64(tb.Nanoseconds())/ops, baseName+"-ns/op")
	b.ReportMetric(float64(tv.Nanoseconds())/ops, variantName+"-ns/op")
	b.ReportMetric(ratios[len(ratios)/2], variantName+"/"+baseName)
}

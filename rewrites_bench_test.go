package ebb_test

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/store/storetest"
)

// BenchmarkTTLRewrite measures what a TTL rewrite costs on the embedded
// backend, through the whole DB as ebb serve opens it (meter, expiry in
// mode sweep, the log of expirations), beside its baseline in the same
// round: the same rows written by plain puts (shared-table puts one item
// at a time; list adds of 10 items a list). Each round opens a new store
// on disk, writes the rows (timed: the baseline), raises the TTL from 1 h
// to 2 h with a rewrite, and runs the job to its end (timed), so every
// row is rewritten. Writes are not synced (the shared disk's fsync would
// hide the work); both sides make one commit per write the same way.
//
//	go test -run '^$' -bench BenchmarkTTLRewrite -benchtime 1x -count 5 .
//
// It reports rows/s and the process's CPU time per row of each side, and
// their ratios (rewrite / put).
func BenchmarkTTLRewrite(b *testing.B) {
	const (
		lists10 = 2000  // lists of 10 items
		items   = 20000 // shared-table items
	)
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			db, clk := rewriteBenchDB(b)
			ctx := b.Context()
			if _, _, err := db.Tables().CreateTable(ctx, "orders", multitable.Config{DefaultTTL: time.Hour}); err != nil {
				b.Fatal(err)
			}
			attrs := json.RawMessage(`{"user":"u-123456","plan":"pro","score":0.93,"tags":["a","b","c"]}`)
			put := measure(func() {
				for i := range items {
					if _, err := db.Tables().Put(ctx, "orders", multitable.PutItem{Key: fmt.Sprint("o-", i), Timestamp: clk.Now(), Attributes: attrs}); err != nil {
						b.Fatal(err)
					}
				}
			})
			if _, _, err := db.Tables().CreateTable(ctx, "orders", multitable.Config{DefaultTTL: 2 * time.Hour, Rewrite: true}); err != nil {
				b.Fatal(err)
			}
			clk.Advance(store.DefaultCacheTTL)
			rw := measure(func() {
				if err := db.Tables().RunRewrites(ctx, nil, nil); err != nil {
					b.Fatal(err)
				}
			})
			if j, _, err := db.Tables().Rewrite(ctx, "orders"); err != nil || j.Active() || j.Rewritten != items {
				b.Fatalf("job at its end: %+v %v, want %d rewritten", j, err, items)
			}
			reportRewrite(b, items, put, rw)
			closeBenchDB(b, db)
		}
	})
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			db, clk := rewriteBenchDB(b)
			ctx := b.Context()
			id := lists.FeatureID{EntityType: "user", Feature: "stories_presented"}
			if _, _, err := db.Lists().CreateFeature(ctx, id, time.Hour); err != nil {
				b.Fatal(err)
			}
			put := measure(func() {
				for l := range lists10 {
					add := make([]lists.Item, 10)
					for i := range add {
						add[i] = lists.Item{Value: fmt.Appendf(nil, "story-%010d", i), Timestamp: clk.Now().Add(-time.Duration(i) * time.Millisecond)}
					}
					if _, err := db.Lists().Add(ctx, id, fmt.Sprint("user-", l), add); err != nil {
						b.Fatal(err)
					}
				}
			})
			if _, _, err := db.Lists().CreateFeatureWith(ctx, id, lists.FeatureConfig{TTL: 2 * time.Hour, Rewrite: true}); err != nil {
				b.Fatal(err)
			}
			clk.Advance(store.DefaultCacheTTL)
			rw := measure(func() {
				if err := db.Lists().RunRewrites(ctx, nil, nil); err != nil {
					b.Fatal(err)
				}
			})
			if j, _, err := db.Lists().Rewrite(ctx, id); err != nil || j.Active() || j.Rewritten != lists10*10 {
				b.Fatalf("job at its end: %+v %v, want %d rewritten", j, err, lists10*10)
			}
			reportRewrite(b, lists10*10, put, rw)
			closeBenchDB(b, db)
		}
	})
}

// rewriteBenchDB opens a DB on a new unsynced store on disk, without
// background roles (the benchmark runs the rewrite itself), under a clock
// it can move past the rewrite's wait for other processes' caches.
func rewriteBenchDB(b *testing.B) (*ebb.DB, *storetest.Clock) {
	b.Helper()
	clk := storetest.NewClock(time.Now().UTC().Truncate(time.Millisecond))
	st, err := ebbpebble.Open(b.TempDir(), ebbpebble.Options{NoSync: true, Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	db, err := ebb.Open(b.Context(), ebb.Options{Store: st, Now: clk.Now, NoBackground: true})
	if err != nil {
		b.Fatal(err)
	}
	return db, clk
}

func closeBenchDB(b *testing.B, db *ebb.DB) {
	b.Helper()
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
}

// cost is the wall and CPU time some work took.
type cost struct{ wall, cpu time.Duration }

// measure runs f and returns its cost; the CPU time is the process's,
// Pebble's background work included, which drifts less than the wall
// time when other work shares the machine.
func measure(f func()) cost {
	start, cpu := time.Now(), processCPU()
	f()
	return cost{wall: time.Since(start), cpu: processCPU() - cpu}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRewrite reports one round's figures for rows rows: each side's
// rows/s and CPU µs per row, and the rewrite's over the put's.
func reportRewrite(b *testing.B, rows int, put, rw cost) {
	perRow := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(rows) }
	b.ReportMetric(float64(rows)/put.wall.Seconds(), "put-rows/s")
	b.ReportMetric(float64(rows)/rw.wall.Seconds(), "rewrite-rows/s")
	b.ReportMetric(perRow(put.cpu), "put-cpu-µs/row")
	b.ReportMetric(perRow(rw.cpu), "rewrite-cpu-µs/row")
	b.ReportMetric(rw.wall.Seconds()/put.wall.Seconds(), "wall-ratio")
	b.ReportMetric(float64(rw.cpu)/float64(put.cpu), "cpu-ratio")
}

package ebb_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/pairbench"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/timeseries"
)

// BenchmarkMeterOverhead measures what the meter costs on the embedded
// hot paths as a library user calls them: two DBs over the embedded store
// in memory without syncing (its cheapest setting, where the meter's share
// is the largest), one opened with Options.NoMetering, run in alternating
// chunks by pairbench, which reports metered/bare:
//
//	go test -run '^$' -bench MeterOverhead -count 5 .
//
// The meter package's BenchmarkOverhead measures the decorator alone over
// the bare store's Get, Write and Scan, its worst case.
func BenchmarkMeterOverhead(b *testing.B) {
	for _, p := range facadePaths {
		b.Run("op="+p.name, func(b *testing.B) {
			bare, metered := p.setup(b, openBench(b, false)), p.setup(b, openBench(b, true))
			pairbench.Run(b, "bare", "metered", bare, metered)
		})
	}
}

// openBench opens a DB over a fresh in-memory embedded store, metered or
// not, without the background loops (the benchmarks write and read only).
func openBench(b *testing.B, metered bool) *ebb.DB {
	db, err := ebb.Open(b.Context(), ebb.Options{
		Store: testbackend.Pebble(b, nil), NoMetering: !metered, NoBackground: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

var (
	benchFeature = lists.FeatureID{EntityType: "user", Feature: "recent_items", Version: "v1"}
	benchBase    = time.Now().Add(-time.Hour).Truncate(time.Millisecond)
)

// facadePaths are the embedded hot paths: setup prepares a DB and returns
// the operation, whose argument counts the calls made on that DB.
var facadePaths = []struct {
	name  string
	setup func(b *testing.B, db *ebb.DB) func(i int)
}{
	{"event-put-10", func(b *testing.B, db *ebb.DB) func(int) {
		createIndex(b, db)
		events := make([]timeseries.Event, 10)
		return func(i int) {
			for j := range events {
				events[j] = benchEvent(i*10 + j)
			}
			if _, err := db.Indexes().Put(b.Context(), "events", events); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{"event-query-100", func(b *testing.B, db *ebb.DB) func(int) {
		createIndex(b, db)
		events := make([]timeseries.Event, 1000)
		for j := range events {
			events[j] = benchEvent(j)
		}
		if _, err := db.Indexes().Put(b.Context(), "events", events); err != nil {
			b.Fatal(err)
		}
		q := timeseries.Query{IndexID: "acct_1", From: benchBase.Add(-time.Minute), To: benchBase.Add(time.Hour), Desc: true, Limit: 100}
		return func(int) {
			if p, err := db.Indexes().Query(b.Context(), "events", q); err != nil || len(p.Events) != 100 {
				b.Fatal(len(p.Events), err)
			}
		}
	}},
	{"list-add-10", func(b *testing.B, db *ebb.DB) func(int) {
		createFeature(b, db)
		items := make([]lists.Item, 10)
		return func(i int) {
			for j := range items {
				items[j] = lists.Item{Value: fmt.Appendf(nil, "item-%d", i*10+j), Timestamp: benchBase.Add(time.Duration(i*10+j) * time.Microsecond)}
			}
			if _, err := db.Lists().Add(b.Context(), benchFeature, fmt.Sprintf("u%d", i%100), items); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{"list-get-100", func(b *testing.B, db *ebb.DB) func(int) {
		createFeature(b, db)
		items := make([]lists.Item, 1000)
		for j := range items {
			items[j] = lists.Item{Value: fmt.Appendf(nil, "item-%06d", j), Timestamp: benchBase.Add(time.Duration(j) * time.Millisecond)}
		}
		if _, err := db.Lists().Add(b.Context(), benchFeature, "u1", items); err != nil {
			b.Fatal(err)
		}
		return func(int) {
			if got, err := db.Lists().Get(b.Context(), benchFeature, "u1", time.Time{}, 100); err != nil || len(got) != 100 {
				b.Fatal(len(got), err)
			}
		}
	}},
	{"table-put", func(b *testing.B, db *ebb.DB) func(int) {
		createTable(b, db)
		attrs := json.RawMessage(`{"user":"u1","cart":[1,2,3],"seen":"2026-11-23T10:00:00Z"}`)
		return func(i int) {
			if _, err := db.Tables().Put(b.Context(), "sessions", multitable.PutItem{Key: fmt.Sprintf("s%d", i%1000), Timestamp: time.Now(), Attributes: attrs}); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{"table-get", func(b *testing.B, db *ebb.DB) func(int) {
		createTable(b, db)
		attrs := json.RawMessage(`{"user":"u1","cart":[1,2,3],"seen":"2026-11-23T10:00:00Z"}`)
		for j := range 100 {
			if _, err := db.Tables().Put(b.Context(), "sessions", multitable.PutItem{Key: fmt.Sprintf("s%d", j), Timestamp: time.Now(), Attributes: attrs}); err != nil {
				b.Fatal(err)
			}
		}
		keys := make([]string, 100)
		for j := range keys {
			keys[j] = fmt.Sprintf("s%d", j)
		}
		return func(i int) {
			if _, err := db.Tables().Get(b.Context(), "sessions", keys[i%100]); err != nil {
				b.Fatal(err)
			}
		}
	}},
}

func benchEvent(i int) timeseries.Event {
	return timeseries.Event{
		IndexID: "acct_1", EventID: fmt.Sprintf("e%08d", i),
		Timestamp: benchBase.Add(time.Duration(i) * time.Millisecond), Payload: make([]byte, 100),
	}
}

func createIndex(b *testing.B, db *ebb.DB) {
	if _, _, err := db.Indexes().Create(b.Context(), timeseries.Config{
		Name: "events", TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 7 * 24 * time.Hour,
	}); err != nil {
		b.Fatal(err)
	}
}

func createFeature(b *testing.B, db *ebb.DB) {
	if _, _, err := db.Lists().CreateFeature(b.Context(), benchFeature, 24*time.Hour); err != nil {
		b.Fatal(err)
	}
}

func createTable(b *testing.B, db *ebb.DB) {
	if _, _, err := db.Tables().CreateTable(b.Context(), "sessions", multitable.Config{}); err != nil {
		b.Fatal(err)
	}
}

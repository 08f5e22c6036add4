package pebble

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// cancelRows is the rows the cancellation tests write into one partition:
// many more than a scan reads between two looks at its context.
const cancelRows = 2000

// openCancelStore opens a store on an in-memory file system, on clock
// *now, holding cancelRows rows of partition "p" that expire at expire
// (zero: never), and an indexed table for QueryIndex.
func openCancelStore(t *testing.T, now *atomic.Int64, expire time.Time) *Store {
	t.Helper()
	s, err := Open("db", Options{FS: vfs.NewMem(), Now: func() time.Time { return time.UnixMilli(now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	spec := eventsSpec
	spec.Indexes = []store.IndexSpec{{Name: "by_payload", Column: "payload"}}
	if err := s.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	muts := make([]store.Mutation, 0, cancelRows)
	for i := range cancelRows {
		muts = append(muts, store.Mutation{Partition: []any{"p"}, Clustering: []any{int64(i)}, ExpiresAt: expire,
			Cells: []store.Cell{{Column: "payload", Value: []byte("same")}}})
	}
	if err := s.Write(ctx, "events", muts); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScanStopsWhenCancelled checks that every read that walks keys stops
// once its context is cancelled: a read whose client has gone must not run
// on to the end of its range. A scan cancelled by its own callback stops
// within 64 rows, and one cancelled before it starts reads
// nothing; so do scans over rows that have all expired (which hand fn
// nothing, so that only the scan itself can notice), QueryIndex and Stats.
func TestScanStopsWhenCancelled(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	s := openCancelStore(t, &now, time.Time{})
	q := store.Query{Partition: []any{"p"}, Limit: store.MaxLimit}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	_, err := s.Scan(ctx, "events", q, func(*store.RawRow) error {
		seen++
		if seen == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("scan cancelled after 10 of %d rows: err %v after %d rows, want context.Canceled", cancelRows, err, seen)
	}
	if seen > 10+scanCheckEvery {
		t.Fatalf("scan cancelled after 10 rows went on to %d rows", seen)
	}

	done, stop := context.WithCancel(context.Background())
	stop()
	if page, err := kit.Query(done, s, "events", q); !errors.Is(err, context.Canceled) {
		t.Fatalf("query with a cancelled context: %d rows, err %v; want context.Canceled", len(page.Rows), err)
	}
	if keys, err := s.QueryIndex(done, "events", "by_payload", []any{"p"}, []byte("same")); !errors.Is(err, context.Canceled) {
		t.Fatalf("index query with a cancelled context: %d keys, err %v; want context.Canceled", len(keys), err)
	}
	if st, err := s.Stats(done, "events"); !errors.Is(err, context.Canceled) {
		t.Fatalf("stats with a cancelled context: %+v, err %v; want context.Canceled", st, err)
	}
}

// TestScanOverExpiredRowsStopsWhenCancelled checks that a scan skipping
// expired rows, which calls nothing a caller could cancel from, still
// looks at its context.
func TestScanOverExpiredRowsStopsWhenCancelled(t *testing.T) {
	var now atomic.Int64
	start := time.Now()
	now.Store(start.UnixMilli())
	s := openCancelStore(t, &now, start.Add(time.Hour))
	now.Store(start.Add(2 * time.Hour).UnixMilli()) // every row has expired
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	_, err := s.Scan(ctx, "events", store.Query{Partition: []any{"p"}, Limit: 10}, func(*store.RawRow) error { n++; return nil })
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("scan of expired rows with a cancelled context: %d rows, err %v; want none and context.Canceled", n, err)
	}
}

package pebble

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// TestOptionsCacheOverflow: a cache size that overflows once the
// memtables' share is added is refused.
func TestOptionsCacheOverflow(t *testing.T) {
	if _, err := Open("db", Options{FS: vfs.NewMem(), CacheSize: math.MaxInt64}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Open with CacheSize MaxInt64: %v, want ErrInvalid", err)
	}
}

// TestBlockCacheBesideMemtables: once the memtables have grown to full
// size, the block cache still holds blocks and a repeated read finds them
// there. Pebble charges the memtables against the block cache; when the
// store made the cache no larger than a memtable, it held nothing, and
// every read went back to the sstables.
func TestBlockCacheBesideMemtables(t *testing.T) {
	ctx := context.Background()
	const size = 1 << 20
	s, err := Open("db", Options{FS: vfs.NewMem(), NoSync: true, CacheSize: size, MemTableSize: size})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	// 8 MiB of rows: enough flushes for the memtables to reach full size.
	payload := make([]byte, 1024)
	for p := range 64 {
		batch := make([]store.Mutation, 128)
		for i := range batch {
			batch[i] = store.Mutation{Partition: []any{fmt.Sprintf("p%02d", p)}, Clustering: []any{int64(i)},
				Cells: []store.Cell{{Column: "payload", Value: payload}}}
		}
		if err := s.Write(ctx, eventsSpec.Name, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	read := func() {
		page, err := kit.Query(ctx, s, eventsSpec.Name, store.Query{Partition: []any{"p07"}, Limit: 100})
		if err != nil || len(page.Rows) != 100 {
			t.Fatalf("query: %d rows, %v", len(page.Rows), err)
		}
	}
	read()
	before := s.db.Metrics().BlockCache
	read()
	after := s.db.Metrics().BlockCache
	if after.Size == 0 || after.Misses != before.Misses || after.Hits == before.Hits {
		t.Errorf("block cache on a repeated read: %d bytes held, %d misses, %d hits; want blocks held, hits and no misses",
			after.Size, after.Misses-before.Misses, after.Hits-before.Hits)
	}
}

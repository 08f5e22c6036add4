package cql

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
)

// BenchmarkRawDriver compares, on the same node in one run, event writes
// and list reads through the Store with the same CQL statements sent with
// the driver directly, on the Store's own session (so the same connection
// pool, consistency and page size). What the ratio measures is ebb's own
// work around the driver: resolving the mutation, building the statement,
// timeouts, retries and metrics, and decoding rows. docs/performance.md
// has the figures:
//
//	env -u EBB_CQL_HOSTS EBB_TEST_BACKENDS=cql scripts/with-cassandra.sh \
//	  go test -run '^$' -bench RawDriver -benchtime 3000x ./store/cql/
//
// Sixteen goroutines (8 per core) run each path; writes are one event
// each, reads a partition of 20 list items, at LOCAL_QUORUM.
func BenchmarkRawDriver(b *testing.B) {
	testselect.Need(b, testselect.CQL)
	hosts := splitEnvHosts()
	if len(hosts) == 0 {
		b.Fatal("EBB_CQL_HOSTS is not set: run through scripts/with-cassandra.sh")
	}
	ctx := context.Background()
	o := DefaultOptions()
	o.Hosts, o.CreateKeyspace, o.Timeout = hosts, true, 30*time.Second
	o.Keyspace = fmt.Sprintf("ebbt_cqlbench_%06x", rand.Uint32()&0xffffff)
	s, err := Open(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = s.Close()
		_ = dropKeyspace(hosts, o.Keyspace)
	})
	events := store.TableSpec{
		Name:         "events",
		PartitionKey: []store.Column{{Name: "index_id", Type: store.TypeText}, {Name: "bucket", Type: store.TypeInt64}},
		Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}, {Name: "event_id", Type: store.TypeText}},
		Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
		NeverExpires: true,
	}
	list := store.TableSpec{
		Name:            "list",
		PartitionKey:    []store.Column{{Name: "entity_id", Type: store.TypeText}},
		Clustering:      []store.Column{{Name: "item_key", Type: store.TypeText}},
		ClusteringOrder: store.Desc,
		Values:          []store.Column{{Name: "value", Type: store.TypeBytes}},
		DefaultTTL:      time.Hour,
	}
	for _, spec := range []store.TableSpec{events, list} {
		if err := s.CreateTable(ctx, spec); err != nil {
			b.Fatal(err)
		}
	}
	payload := make([]byte, 100)
	const entities, items = 100, 20
	for e := range entities {
		batch := make([]store.Mutation, items)
		for i := range batch {
			batch[i] = store.Mutation{Partition: []any{"e" + strconv.Itoa(e)}, Clustering: []any{fmt.Sprintf("%03d", i)},
				Cells: []store.Cell{{Column: "value", Value: payload}}}
		}
		if err := s.Write(ctx, list.Name, batch); err != nil {
			b.Fatal(err)
		}
	}

	// The statements the Store sends for these (store/cql/testdata has
	// their golden forms).
	ks := quote(o.Keyspace)
	writeCQL := `UPDATE ` + ks + `."events" USING TIMESTAMP ? SET "_x" = ?, "payload" = ?, "_e_payload" = ? WHERE "index_id" = ? AND "bucket" = ? AND "ts" = ? AND "event_id" = ?`
	readCQL := `SELECT "item_key", "_x", "value", "_e_value" FROM ` + ks + `."list" WHERE "entity_id" = ?`

	var seq atomic.Int64
	base := time.Now().Truncate(time.Millisecond)
	parallel := func(b *testing.B, op func(n int64) error) {
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(seq.Add(1)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	ops := map[string]func(n int64) error{
		"write/raw": func(n int64) error {
			return s.session.Query(writeCQL, time.Now().UnixMicro(), never, payload, never,
				"idx", n%64, base.Add(time.Duration(n)*time.Millisecond), "e"+strconv.FormatInt(n, 10)).
				Idempotent(true).ExecContext(ctx)
		},
		"write/ebb": func(n int64) error {
			return s.Write(ctx, events.Name, []store.Mutation{{
				Partition:  []any{"idx", n % 64},
				Clustering: []any{base.Add(time.Duration(n) * time.Millisecond), "e" + strconv.FormatInt(n, 10)},
				Cells:      []store.Cell{{Column: "payload", Value: payload}},
			}})
		},
		"read/raw": func(n int64) error {
			var key string
			var x, e int64
			var value []byte
			iter := s.session.Query(readCQL, "e"+strconv.FormatInt(n%entities, 10)).
				Consistency(gocql.LocalQuorum).Idempotent(true).PageSize(items + 1).IterContext(ctx)
			rows := 0
			for iter.Scan(&key, &x, &value, &e) {
				rows++
			}
			if err := iter.Close(); err != nil {
				return err
			}
			if rows != items {
				return fmt.Errorf("read %d rows, want %d", rows, items)
			}
			return nil
		},
		"read/ebb": func(n int64) error {
			rows := 0
			_, err := s.Scan(ctx, list.Name, store.Query{Partition: []any{"e" + strconv.FormatInt(n%entities, 10)}, Limit: items},
				func(*store.RawRow) error { rows++; return nil })
			if err == nil && rows != items {
				err = fmt.Errorf("read %d rows, want %d", rows, items)
			}
			return err
		},
	}
	// A warm-up, untimed: the node's first requests on a table are slower
	// (its JIT, its caches), and would count against whichever path ran
	// first.
	for _, name := range []string{"write/raw", "write/ebb", "read/raw", "read/ebb"} {
		for n := range int64(2000) {
			if err := ops[name](n); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Rounds alternate which path goes first, since on a shared machine
	// the node's speed drifts from one minute to the next.
	for round := range 4 {
		order := []string{"write/raw", "write/ebb", "read/raw", "read/ebb"}
		if round%2 == 1 {
			order = []string{"write/ebb", "write/raw", "read/ebb", "read/raw"}
		}
		for _, name := range order {
			b.Run(name, func(b *testing.B) { parallel(b, ops[name]) })
		}
	}
}

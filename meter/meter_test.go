package meter_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/kit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The DynamoDB client keeps idle keep-alive connections open.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}

func TestPebbleCounts(t *testing.T) { checkCounts(t, testbackend.Pebble) }

// TestDynamoCounts runs the same sequence on the DynamoDB backend at
// EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh) when EBB_TEST_BACKENDS
// selects dynalite, and then fails, never skips, without one.
func TestDynamoCounts(t *testing.T) {
	dynamotest.Require(t)
	checkCounts(t, testbackend.Dynamo)
}

const (
	shard = "events_1719446400"
	list  = "list_0123456789abcdef0123456789abcdef"
)

// shardSpec is an index shard's table: one text partition column, an
// int64 clustering column and one bytes value.
var shardSpec = store.TableSpec{
	Name:         shard,
	PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
	Values:       []store.Column{{Name: "v", Type: store.TypeBytes}},
}

// checkCounts runs a known sequence of operations through the meter and
// compares every counter with the units worked out by hand (in the
// comments, from the size rules in the package comment). The figures do
// not depend on the backend: the meter counts what a provider would bill,
// whatever runs underneath.
func checkCounts(t *testing.T, open testbackend.Factory) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	s, err := meter.Wrap(open(t, nil), meter.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	listSpec := shardSpec
	listSpec.Name, listSpec.DefaultTTL = list, time.Hour
	for _, spec := range []store.TableSpec{shardSpec, listSpec} {
		if err := s.CreateTable(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	up := func(k string, c int64, n int) store.Mutation {
		return store.Mutation{Partition: []any{k}, Clustering: []any{c}, Cells: []store.Cell{{Column: "v", Value: bytes.Repeat([]byte{'x'}, n)}}}
	}
	write := func(table string, batch ...store.Mutation) {
		t.Helper()
		if err := s.Write(ctx, table, batch); err != nil {
			t.Fatal(err)
		}
	}

	// 1. One 2,000-byte row. DynamoDB item: pk 2+3, sk 2+1+8, x 1+11
	// (never: 19 digits), v0 2+2000, e0 2+11 = 2,043 bytes: 2 WRU.
	// Keyspaces: pk "a" twice + 1 + 3 = 6, ck (2 bytes) twice + 1 + 1 =
	// 6, cells "_x" 11, v 2000, "_e_v" 11 with 1 + 20 each = 2,085:
	// 2,097 bytes, 3 WRU (row metadata is billed for storage only). Native TTL would delete it (a shard row): 1 item on
	// DynamoDB, 3 TTL delete units on Keyspaces.
	write(shard, up("a", 1, 2000))
	// 2. Three 100-byte rows of one partition in one batch: a transaction
	// on DynamoDB (143 bytes, 1 WRU, doubled: 2 each) and a LOGGED batch
	// on Keyspaces (197 bytes, 1 WRU, twice: 2 each). Native TTL: 3 and 3.
	write(shard, up("a", 2, 100), up("a", 3, 100), up("a", 4, 100))
	// 3. Query the partition: 4 rows, 2,043 + 3*143 = 2,472 bytes on
	// DynamoDB, about 2,700 on Keyspaces: 1 RRU each. A query
	// is a Scan, sized from the tally of lengths, where every expiry
	// attribute ("x" and "e0", never here: 11 bytes) counts as 8 bytes:
	// 2,472 - 4*2*3 = 2,448 bytes.
	page, err := kit.Query(ctx, s, shard, store.Query{Partition: []any{"a"}, Limit: 10})
	if err != nil || len(page.Rows) != 4 {
		t.Fatalf("query: %d rows, %v", len(page.Rows), err)
	}
	// 4. Get the big row (1 RRU each) and a missing one (1 RRU each).
	if _, err := s.Get(ctx, shard, []any{"a"}, []any{int64(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, shard, []any{"a"}, []any{int64(99)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing row: %v", err)
	}
	// 5. Delete a row: its key only, 16 bytes on DynamoDB, 12 on
	// Keyspaces: 1 WRU each.
	write(shard, store.Mutation{Kind: store.DeleteRow, Partition: []any{"a"}, Clustering: []any{int64(4)}})
	// 6. A batch over two partitions: no transaction on DynamoDB (1 WRU
	// each, 3); on Keyspaces the lone "a" row is 1 WRU and the two "b"
	// rows go out as a LOGGED batch, 2 each: 5. Native TTL: 3 and 3.
	write(shard, up("a", 5, 10), up("b", 1, 10), up("b", 2, 10))
	// 7. A list row under the table's default TTL of an hour: x 1+8,
	// v0 2+50, e0 2+8, ttl 3+6, keys 5+11: 96 bytes, 1 WRU; Keyspaces
	// 6 + 6 + 66 of cells + 63 = 141 bytes, 1 WRU. Native TTL: 1 and 1.
	// A second row that never expires costs the same to write and nothing
	// to expire.
	write(list, up("e", 7, 50))
	never := up("e", 8, 50)
	never.NoExpiry = true
	write(list, never)
	// 8. Dropping the shard is free.
	if err := s.DropTable(ctx, shard); err != nil {
		t.Fatal(err)
	}

	u := s.Usage()
	for _, c := range []struct {
		model, unit, class string
		want               int64
	}{
		{"dynamodb", "write", "index_shard", 2 + 6 + 1 + 3},
		{"keyspaces", "write", "index_shard", 3 + 6 + 1 + 5},
		{"dynamodb", "read", "index_shard", 1 + 1 + 1},
		{"keyspaces", "read", "index_shard", 1 + 1 + 1},
		{"dynamodb", "native_ttl_delete", "index_shard", 1 + 3 + 3},
		{"keyspaces", "native_ttl_delete", "index_shard", 3 + 3 + 3},
		{"dynamodb", "write", "list_feature", 2},
		{"keyspaces", "write", "list_feature", 2},
		{"dynamodb", "native_ttl_delete", "list_feature", 1},
		{"keyspaces", "native_ttl_delete", "list_feature", 1},
		{"dynamodb", "write", "catalog", 0},
	} {
		if got := u.Total(c.model, c.unit, c.class); got != c.want {
			t.Errorf("%s %s %s: %d units, want %d", c.model, c.unit, c.class, got, c.want)
		}
		if got := gathered(t, reg, c.model, c.unit, c.class); int64(got) != c.want {
			t.Errorf("ebb_request_units_total{%s,%s,%s} = %v, want %d", c.model, c.unit, c.class, got, c.want)
		}
	}
	ops := map[string]meter.OpUsage{}
	for _, o := range u.Operations {
		ops[o.Class+"/"+o.Op] = o
	}
	for key, want := range map[string][2]int64{ // requests, rows
		"index_shard/upsert":       {3, 7},
		"index_shard/delete":       {1, 1},
		"index_shard/query":        {1, 4},
		"index_shard/get":          {2, 1},
		"index_shard/create_table": {1, 0},
		"index_shard/drop_table":   {1, 0},
		"list_feature/upsert":      {2, 2},
	} {
		if o := ops[key]; o.Requests != want[0] || o.Rows != want[1] {
			t.Errorf("%s: %d requests, %d rows; want %d, %d", key, o.Requests, o.Rows, want[0], want[1])
		}
	}
	if o := ops["index_shard/query"]; o.Bytes != 2448 {
		t.Errorf("query bytes %d, want 2448", o.Bytes)
	}
	if u.Since.IsZero() || u.At.Before(u.Since) {
		t.Errorf("snapshot times %v .. %v", u.Since, u.At)
	}
}

// gathered returns the value of the ebb_request_units_total series with
// the given labels, as the registry exports it.
func gathered(t *testing.T, reg *prometheus.Registry, model, unit, class string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ebb_request_units_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["provider_model"] == model && l["unit"] == unit && l["class"] == class {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no ebb_request_units_total{%s,%s,%s}", model, unit, class)
	return 0
}

func TestClassify(t *testing.T) {
	for name, want := range map[string]meter.Class{
		store.MetaTable:                         meter.ClassCatalog,
		expiry.IndexTable:                       meter.ClassExpiryIndex,
		multitable.ItemsTable:                   meter.ClassSharedTable,
		"ebb_leases":                            meter.ClassCatalog,
		"events_1719446400":                     meter.ClassIndexShard,
		"a_b_c_0":                               meter.ClassIndexShard,
		"list_0123456789abcdef0123456789abcdef": meter.ClassListFeature,
		"list_0123":                             meter.ClassOther,
		"list_0123456789ABCDEF0123456789abcdef": meter.ClassOther,
		"events_":                               meter.ClassOther,
		"Events_1":                              meter.ClassOther,
		"_1":                                    meter.ClassOther,
		"events_12x":                            meter.ClassOther,
		strings.Repeat("a", 32) + "_1":          meter.ClassOther,
		strings.Repeat("a", 31) + "_1":          meter.ClassIndexShard,
		"plain":                                 meter.ClassOther,
	} {
		if got := meter.Classify(name); got != want {
			t.Errorf("Classify(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		n           int
		write, read int64
	}{
		{0, 1, 1}, {1, 1, 1}, {1024, 1, 1}, {1025, 2, 1}, {4096, 4, 1}, {4097, 5, 2}, {409600, 400, 100},
	} {
		if w, r := meter.WriteUnits(c.n), meter.ReadUnits(c.n); w != c.write || r != c.read {
			t.Errorf("%d bytes: %d WRU, %d RRU; want %d, %d", c.n, w, r, c.write, c.read)
		}
	}
}

// TestLoggedBatchCounts: on Keyspaces every row whose partition has
// another row in a multi-partition batch goes out LOGGED, billed twice,
// however many rows share it and wherever they stand in the batch; batches
// of up to 32 mutations (compared pairwise) and longer ones (counted in a
// map) agree.
func TestLoggedBatchCounts(t *testing.T) {
	for _, c := range []struct {
		parts []string // each mutation's partition, in batch order
		want  int64    // Keyspaces write units: 2 for a shared partition, 1 alone
	}{
		{[]string{"a", "b", "b"}, 1 + 2*2},
		{[]string{"c", "d", "d", "d"}, 1 + 3*2},
		{[]string{"d", "c", "d", "e", "d"}, 1 + 1 + 3*2},
		{append(strings.Split(strings.Repeat("x,", 30), ",")[:30], "y", "x"), 31*2 + 1}, // 32: pairwise
		{append(strings.Split(strings.Repeat("x,", 31), ",")[:31], "y", "x"), 32*2 + 1}, // 33: map
	} {
		s, err := meter.Wrap(testbackend.Pebble(t, nil), meter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		spec := shardSpec
		if err := s.CreateTable(t.Context(), spec); err != nil {
			t.Fatal(err)
		}
		batch := make([]store.Mutation, len(c.parts))
		for i, p := range c.parts {
			batch[i] = store.Mutation{Partition: []any{p}, Clustering: []any{int64(i)}, Cells: []store.Cell{{Column: "v", Value: []byte("x")}}}
		}
		if err := s.Write(t.Context(), shard, batch); err != nil {
			t.Fatal(err)
		}
		if got := s.Usage().Total("keyspaces", "write", "index_shard"); got != c.want {
			t.Errorf("partitions %q: %d Keyspaces write units, want %d", c.parts, got, c.want)
		}
	}
}

// TestChargeScanMatchesScan: a read answered from a kept page and charged
// with ChargeScan costs what reading the store again does. Two meters see
// the same writes; one scans twice, the other scans once and charges the
// second read with the first's tally.
func TestChargeScanMatchesScan(t *testing.T) {
	ctx := t.Context()
	spec := shardSpec
	spec.Name, spec.DefaultTTL = list, time.Hour
	usage := func(second func(s *meter.Store, tally store.ScanTally)) []meter.OpUsage {
		s, err := meter.Wrap(testbackend.Pebble(t, nil), meter.Options{Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateTable(ctx, spec); err != nil {
			t.Fatal(err)
		}
		for c := range int64(5) {
			if err := s.Write(ctx, list, []store.Mutation{{Partition: []any{"alice"}, Clustering: []any{c},
				Cells: []store.Cell{{Column: "v", Value: bytes.Repeat([]byte{'x'}, 300*int(c))}}}}); err != nil {
				t.Fatal(err)
			}
		}
		var tally store.ScanTally
		if _, err := s.Scan(ctx, list, store.Query{Partition: []any{"alice"}, Limit: 3, Tally: &tally}, func(*store.RawRow) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if tally.Rows != 3 {
			t.Fatalf("tally %+v, want 3 rows", tally)
		}
		second(s, tally)
		return s.Usage().Operations
	}
	scanned := usage(func(s *meter.Store, _ store.ScanTally) {
		if _, err := s.Scan(ctx, list, store.Query{Partition: []any{"alice"}, Limit: 3}, func(*store.RawRow) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	charged := usage(func(s *meter.Store, tally store.ScanTally) { s.ChargeScan(ctx, list, []any{"alice"}, tally) })
	if !reflect.DeepEqual(scanned, charged) {
		t.Fatalf("charged a kept read as\n %+v\nscanned again\n %+v", charged, scanned)
	}
}

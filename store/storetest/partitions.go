package storetest

import (
	"errors"
	"slices"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Every backend lists a table's partitions (store.PartitionLister), found
// through the wrappers with store.As, so that a shard can be archived
// before its drop on each of them.
var partitionCases = []testCase{
	{"ListsEachOnce", testPartitionsListEachOnce},
	{"Refusals", testPartitionsRefusals},
}

// partSpec has a partition key of three types, so that the lister's
// decoding of each is checked against what was written.
var partSpec = store.TableSpec{
	PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}, {Name: "q", Type: store.TypeInt64}, {Name: "r", Type: store.TypeTimestamp}},
	Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
	Values:       []store.Column{{Name: "v", Type: store.TypeText}},
}

func (e *env) lister() store.PartitionLister {
	e.t.Helper()
	l, ok := store.As[store.PartitionLister](e.s)
	if !ok {
		e.t.Fatalf("the %s store lists no partitions", e.caps.Backend)
	}
	return l
}

// testPartitionsListEachOnce: pages of at most limit partitions hand out
// each partition of the table once, whatever its rows (one partition
// holds more rows than a page has partitions), none of another table's,
// and each key read back reads the partition's rows.
func testPartitionsListEachOnce(e *env) {
	spec := e.create("parts", partSpec)
	other := e.create("parts_other", partSpec)
	base := time.UnixMilli(Epoch.UnixMilli() - 3600_000).UTC()
	var want [][]any
	var batch []store.Mutation
	for i := range 13 {
		p := []any{string(rune('a' + i)), int64(i * 1000), base.Add(time.Duration(i) * time.Second)}
		want = append(want, p)
		rows := 1 + i%3
		if i == 4 {
			rows = 25
		}
		for c := range rows {
			batch = append(batch, store.Mutation{Partition: p, Clustering: []any{int64(c)}, Cells: []store.Cell{cell("v", "x")}})
		}
	}
	e.write(spec.Name, batch...)
	e.write(other.Name, store.Mutation{Partition: []any{"zz", int64(1), base}, Clustering: []any{int64(0)}, Cells: []store.Cell{cell("v", "x")}})

	l := e.lister()
	// At a limit of 1 every partition, the one of many rows too, ends a
	// page, so each next page must start past all of its rows.
	var got [][]any
	for _, limit := range []int{4, 1} {
		got = e.listPartitions(l, spec.Name, limit, len(want))
		// The order is the backend's own; compare as sets, each once.
		slices.SortFunc(got, compareNatural)
		if len(got) != len(want) {
			e.t.Fatalf("%d partitions listed at limit %d, want %d", len(got), limit, len(want))
		}
		for i := range want {
			if !tupleEqual(want[i], got[i]) {
				e.t.Fatalf("partition %d listed as %s at limit %d, want %s", i, fmtTuple(got[i]), limit, fmtTuple(want[i]))
			}
		}
	}
	page, err := kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: got[4], Limit: 100})
	if err != nil || len(page.Rows) != 25 {
		e.t.Fatalf("the listed key %s reads %d rows (%v), want 25", fmtTuple(got[4]), len(page.Rows), err)
	}
}

// listPartitions lists table's partitions page after page, checking that
// no page holds more than limit of them and that the listing ends.
func (e *env) listPartitions(l store.PartitionLister, table string, limit, want int) [][]any {
	e.t.Helper()
	var got [][]any
	var after []byte
	for pages := 0; ; pages++ {
		if pages > 2*want+1 {
			e.t.Fatalf("more than %d pages at limit %d", pages, limit)
		}
		n := 0
		next, err := l.Partitions(e.ctx, table, after, limit, func(p []any) error {
			got = append(got, p)
			n++
			return nil
		})
		if err != nil {
			e.t.Fatalf("Partitions: %v", err)
		}
		if n > limit {
			e.t.Fatalf("a page of %d partitions, limit %d", n, limit)
		}
		if next == nil {
			return got
		}
		after = next
	}
}

// testPartitionsRefusals: a bad limit and a missing table are refused
// with the contract's errors, and the callback's error ends the listing
// as it is.
func testPartitionsRefusals(e *env) {
	spec := e.create("parts_ref", partSpec)
	e.write(spec.Name, store.Mutation{Partition: []any{"a", int64(1), Epoch}, Clustering: []any{int64(0)}, Cells: []store.Cell{cell("v", "x")}})
	l := e.lister()
	none := func([]any) error { return nil }
	for _, limit := range []int{0, store.MaxLimit + 1} {
		if _, err := l.Partitions(e.ctx, spec.Name, nil, limit, none); !isErr(err, store.ErrInvalid) {
			e.t.Errorf("limit %d: %v, want ErrInvalid", limit, err)
		}
	}
	if _, err := l.Partitions(e.ctx, tableName("missing"), nil, 10, none); !isErr(err, store.ErrTableNotFound) {
		e.t.Errorf("missing table: %v, want ErrTableNotFound", err)
	}
	stop := errors.New("stop")
	if _, err := l.Partitions(e.ctx, spec.Name, nil, 10, func([]any) error { return stop }); err != stop {
		e.t.Errorf("callback's error came back as %v", err)
	}
}

package storetest

import (
	"context"
	"errors"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// testReadsStopWhenCancelled checks that Query and Scan of a partition
// holding rows, live and expired, refuse a context already cancelled with
// its error (context.Canceled, so that a server counts the request as the
// client's hang-up) and hand out no row: a read whose caller has gone must
// not run on. Backends look at the context in their scan loops, between
// requests to the service and between rows.
func testReadsStopWhenCancelled(e *env) {
	spec := e.create("cancel", wideSpec(store.Asc, 0))
	pagingData(e, spec.Name)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	for _, reverse := range []bool{false, true} {
		q := store.Query{Partition: []any{"p"}, Reverse: reverse, Limit: store.MaxLimit}
		if page, err := kit.Query(ctx, e.s, spec.Name, q); !errors.Is(err, context.Canceled) {
			e.t.Fatalf("Query (reverse=%v) with a cancelled context: %d rows, err %v; want context.Canceled", reverse, len(page.Rows), err)
		}
		n := 0
		_, err := e.s.Scan(ctx, spec.Name, q, func(*store.RawRow) error { n++; return nil })
		if !errors.Is(err, context.Canceled) || n != 0 {
			e.t.Fatalf("Scan (reverse=%v) with a cancelled context: %d rows, err %v; want none and context.Canceled", reverse, n, err)
		}
	}
}

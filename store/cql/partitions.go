package cql

import (
	"context"
	"strings"

	"github.com/ebb-data/ebb/store"
)

// Partitions lists a table's partitions (store.PartitionLister) with
// SELECT DISTINCT on its partition key columns, a page at a time in token
// order. The cluster walks every token range of the table to answer it, a
// full scan that reads each partition's first cells and skips the rest;
// the archive, the one caller, reads every row afterwards anyway. Unlike a
// Scan's, the page token here is the driver's paging state: a partition
// key is not a bound a CQL query can resume after without token()
// arithmetic, while the paging state resumes exactly where the last page
// ended, and the query text never changes. A page is read whole before fn
// sees any of it, so a read that timed out or was refused as overloaded is
// retried like every other read.
func (s *Store) Partitions(ctx context.Context, name string, after []byte, limit int, fn func(partition []any) error) (_ []byte, err error) {
	if err := store.CheckLimit(limit); err != nil {
		return nil, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer s.observe("partitions", timeNow(), &err)
	sc, err := s.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	cols := make([]string, len(sc.spec.PartitionKey))
	for i, c := range sc.spec.PartitionKey {
		cols[i] = quote(c.Name)
	}
	cql := "SELECT DISTINCT " + strings.Join(cols, ", ") + " FROM " + sc.data
	var parts [][]any
	var next []byte
	err = s.retry.do(ctx, true, func(ctx context.Context) error {
		parts, next = parts[:0], nil
		buf := make([]rawCol, len(cols))
		dest := make([]any, len(cols))
		for i := range buf {
			dest[i] = &buf[i]
		}
		// PageState turns the driver's own paging off: one request, one
		// page of at most limit partitions.
		iter := s.session.Query(cql).Idempotent(true).PageSize(limit).PageState(after).IterContext(ctx)
		for iter.Scan(dest...) {
			p := make([]any, len(buf))
			for i, c := range sc.spec.PartitionKey {
				v, err := buf[i].value(c.Type)
				if err != nil || v == nil {
					_ = iter.Close()
					return store.Errorf(store.ErrStorageFault, "cql: list partitions of %s: malformed partition key", name)
				}
				p[i] = v
			}
			parts = append(parts, p)
		}
		if st := iter.PageState(); len(st) > 0 {
			next = append([]byte(nil), st...)
		}
		return iter.Close()
	})
	if err != nil {
		return nil, s.tableErr(ctx, sc, "list partitions of", err)
	}
	for _, p := range parts {
		if err := fn(p); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// Interface check: the archive finds the lister through the wrappers.
var _ store.PartitionLister = (*Store)(nil)

package pebble

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ebb-data/ebb/store"
)

// Partitions lists a table's partitions in key order (store.PartitionLister):
// it reads the first key of each partition and seeks past the partition,
// so a page costs one seek per partition whatever the rows it holds. The
// page token is the encoded partition key of the last partition handed out.
func (s *Store) Partitions(ctx context.Context, name string, after []byte, limit int, fn func(partition []any) error) ([]byte, error) {
	if err := store.CheckLimit(limit); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	lower := t.prefix
	if after != nil {
		lower = prefixEnd(append(append([]byte(nil), t.prefix...), after...))
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(t.prefix)})
	if err != nil {
		return nil, s.readFault("partitions", name, err)
	}
	defer it.Close()
	n := 0
	var last []byte
	for ok := it.First(); ok; {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("partitions %s: %w", name, err)
		}
		key := it.Key()[len(t.prefix):]
		pk, rest, err := store.DecodeTuple(t.Spec.PartitionKey, key, false)
		if err != nil || len(rest) == 0 {
			return nil, store.Errorf(store.ErrStorageFault, "pebble: partitions %s: malformed key", name)
		}
		if n == limit {
			return last, it.Error()
		}
		enc := append([]byte(nil), key[:len(key)-len(rest)]...)
		if err := fn(pk); err != nil {
			return nil, err
		}
		n++
		last = enc
		ok = it.SeekGE(prefixEnd(append(append([]byte(nil), t.prefix...), enc...)))
	}
	if err := it.Error(); err != nil {
		return nil, s.readFault("partitions", name, err)
	}
	return nil, nil
}

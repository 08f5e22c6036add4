package pebble

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ebb-data/ebb/store"
)

// Get returns one live row; see store.Store.
func (s *Store) Get(ctx context.Context, name string, partition, clustering []any) (store.Row, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return store.Row{}, err
	}
	p, pk, err := store.ResolvePartition(&t.Spec, partition)
	if err != nil {
		return store.Row{}, err
	}
	c, err := store.CheckKey(t.Spec.Clustering, clustering, false)
	if err != nil {
		return store.Row{}, err
	}
	v, closer, err := s.db.Get(rowKey(nil, t.prefix, pk, store.EncodeClustering(&t.Spec, c)))
	if errors.Is(err, pebble.ErrNotFound) {
		return store.Row{}, store.ErrNotFound
	}
	if err != nil {
		return store.Row{}, fmt.Errorf("get from %s: %w", name, err)
	}
	defer closer.Close()
	var f fragment
	vals, exp, ok, err := decodeRow(&t.Spec, v, s.now().UnixMilli(), &f, newArena(1))
	if err != nil {
		return store.Row{}, err
	}
	if !ok {
		return store.Row{}, store.ErrNotFound
	}
	return store.Row{Partition: p, Clustering: c, Values: vals, ExpiresAt: msTime(exp)}, nil
}

func msTime(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// Query reads one partition in clustering order; see store.Store.
func (s *Store) Query(ctx context.Context, name string, q store.Query) (store.Page, error) {
	if err := store.CheckLimit(q.Limit); err != nil {
		return store.Page{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return store.Page{}, err
	}
	p, pk, err := store.ResolvePartition(&t.Spec, q.Partition)
	if err != nil {
		return store.Page{}, err
	}
	kr, err := store.ClusteringRange(&t.Spec, &q)
	if err != nil {
		return store.Page{}, err
	}
	if kr.Empty {
		return store.Page{}, nil
	}
	base := rowKey(nil, t.prefix, pk, nil)
	opts := &pebble.IterOptions{
		LowerBound: append(append([]byte(nil), base...), kr.Start...),
		UpperBound: prefixEnd(base),
	}
	if kr.End != nil {
		opts.UpperBound = append(append([]byte(nil), base...), kr.End...)
	}
	it, err := s.db.NewIterWithContext(ctx, opts)
	if err != nil {
		return store.Page{}, err
	}
	defer it.Close()
	now := s.now().UnixMilli()
	var page store.Page
	page.Rows = make([]store.Row, 0, min(q.Limit, 128))
	var f fragment
	a := newArena(min(q.Limit, 128))
	valid, step := it.First, it.Next
	if q.Reverse {
		valid, step = it.Last, it.Prev
	}
	for ok := valid(); ok; ok = step() {
		v, err := it.ValueAndErr()
		if err != nil {
			return store.Page{}, err
		}
		vals, exp, live, err := decodeRow(&t.Spec, v, now, &f, a)
		if err != nil {
			return store.Page{}, err
		}
		if !live {
			continue
		}
		if len(page.Rows) == q.Limit {
			// A live row follows the full page: hand out a token.
			last := page.Rows[len(page.Rows)-1]
			page.NextPageToken = store.EncodeClustering(&t.Spec, last.Clustering)
			break
		}
		ck, err := decodeClustering(&t.Spec, it.Key()[len(base):], a)
		if err != nil {
			return store.Page{}, fmt.Errorf("query %s: %w", name, err)
		}
		page.Rows = append(page.Rows, store.Row{Partition: p, Clustering: ck, Values: vals, ExpiresAt: msTime(exp)})
	}
	if err := it.Error(); err != nil {
		return store.Page{}, err
	}
	return page, nil
}

// QueryIndex looks rows up by an indexed value, verifying each entry
// against its row; see store.Store.
func (s *Store) QueryIndex(ctx context.Context, name, index string, partition []any, value any) ([][]any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	spec := &t.Spec
	col, v, pk, err := store.ResolveIndexLookup(spec, index, partition, value)
	if err != nil {
		return nil, err
	}
	prefix := indexPrefix(t.prefix, pk, indexOf(spec, col), v)
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	now := s.now().UnixMilli()
	var out [][]any
	var f fragment
	var key []byte
	for it.First(); it.Valid(); it.Next() {
		ckBytes := it.Key()[len(prefix):]
		key = rowKey(key[:0], t.prefix, pk, ckBytes)
		rv, closer, err := s.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		err = decodeFragment(rv, &f)
		match := err == nil && cellEquals(&f, col, v, now)
		closer.Close()
		if err != nil {
			return nil, err
		}
		if !match {
			continue
		}
		ck, err := store.DecodeClustering(spec, ckBytes)
		if err != nil {
			return nil, err
		}
		out = append(out, ck)
	}
	return out, it.Error()
}

// Stats counts the rows physically present by scanning the table, so it is
// exact; Bytes is the logical size of their keys and values (what the table
// holds, before compression, wherever it currently sits: memtable or disk).
func (s *Store) Stats(ctx context.Context, name string) (store.TableStats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return store.TableStats{}, err
	}
	end := prefixEnd(t.prefix)
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: t.prefix, UpperBound: end})
	if err != nil {
		return store.TableStats{}, err
	}
	defer it.Close()
	st := store.TableStats{Exact: true}
	for it.First(); it.Valid(); it.Next() {
		_, rest, err := store.DecodeTuple(t.Spec.PartitionKey, it.Key()[len(t.prefix):], false)
		if err != nil || len(rest) == 0 {
			return store.TableStats{}, fmt.Errorf("stats %s: malformed key", name)
		}
		if rest[0] == spaceRow {
			st.Rows++
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return store.TableStats{}, err
		}
		st.Bytes += int64(len(it.Key()) + len(v))
	}
	if err := it.Error(); err != nil {
		return store.TableStats{}, err
	}
	return st, nil
}

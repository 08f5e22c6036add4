package pebble

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Get returns one live row; see store.Store.
func (s *Store) Get(ctx context.Context, name string, partition, clustering []any) (store.Row, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return store.Row{}, err
	}
	p, pk, c, err := kit.ResolveRowKey(&t.Spec, partition, clustering)
	if err != nil {
		return store.Row{}, err
	}
	v, closer, err := s.db.Get(rowKey(nil, t.prefix, pk, kit.EncodeClustering(&t.Spec, c)))
	if errors.Is(err, pebble.ErrNotFound) {
		return store.Row{}, store.ErrNotFound
	}
	if err != nil {
		return store.Row{}, s.readFault("get from", name, err)
	}
	defer closer.Close()
	var f fragment
	if err := decodeFragment(v, &f); err != nil {
		return store.Row{}, err
	}
	now := s.now().UnixMilli()
	if !fragmentLive(&f, now) {
		return store.Row{}, store.ErrNotFound
	}
	vals, exp, _, err := decodeRow(&t.Spec, &f, now, kit.NewArena(1))
	if err != nil {
		return store.Row{}, err
	}
	return store.Row{Partition: p, Clustering: c, Values: vals, ExpiresAt: msTime(exp)}, nil
}

func msTime(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// Scan hands out the live rows of one partition in clustering order
// without materializing them: values alias Pebble's buffers for the
// duration of each callback; see store.Store. It adds up what it hands
// out in q.Tally as it builds each row.
func (s *Store) Scan(ctx context.Context, name string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	var raw store.RawRow
	t := q.Tally
	return s.scan(ctx, name, q, func(spec *store.TableSpec, _ []any, ck []byte, f *fragment, now int64) error {
		raw.Clustering = ck
		if cap(raw.Values) < len(spec.Values) {
			raw.Values = make([][]byte, len(spec.Values))
		}
		raw.Values = raw.Values[:len(spec.Values)]
		clear(raw.Values)
		for _, c := range f.cells {
			if c.kind != kindTomb && liveAt(c.exp, now) && c.col < uint64(len(raw.Values)) {
				raw.Values[c.col] = c.payload
				if raw.Values[c.col] == nil {
					raw.Values[c.col] = []byte{}
				}
			}
		}
		raw.ExpiresAt = 0
		if f.hasMarker {
			raw.ExpiresAt = int64(f.markerExp)
		}
		if t != nil {
			t.Add(&raw)
		}
		return fn(&raw)
	})
}

// scanScratch is the memory one scan reuses from the last: the row key
// prefix, the iterator's bounds and options, and the decoded fragment. A
// served list read would otherwise allocate each of them; none is used once
// scan returns (fn's arguments are valid only until it returns).
type scanScratch struct {
	base, lower, upper []byte
	opts               pebble.IterOptions
	f                  fragment
}

var scanScratchPool = sync.Pool{New: func() any { return new(scanScratch) }}

// release returns sc to the pool, its cells cleared so that the pool holds
// no reference to a value the iterator read.
func (sc *scanScratch) release() {
	clear(sc.f.cells[:cap(sc.f.cells)])
	sc.f.cells = sc.f.cells[:0]
	scanScratchPool.Put(sc)
}

// scan visits the live rows of a query in order and returns the page token:
// the encoded clustering key of the last row visited when a live row
// follows it. fn sees the row's encoded clustering key and decoded fragment,
// valid until it returns.
func (s *Store) scan(ctx context.Context, name string, q store.Query,
	fn func(spec *store.TableSpec, p []any, ck []byte, f *fragment, now int64) error) ([]byte, error) {
	if err := store.CheckLimit(q.Limit); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	p, pk, err := kit.ResolvePartition(&t.Spec, q.Partition)
	if err != nil {
		return nil, err
	}
	kr, err := kit.ClusteringRange(&t.Spec, &q)
	if err != nil {
		return nil, err
	}
	if kr.Empty {
		return nil, nil
	}
	sc := scanScratchPool.Get().(*scanScratch)
	defer sc.release()
	base := rowKey(sc.base[:0], t.prefix, pk, nil)
	sc.base = base
	sc.lower = append(append(sc.lower[:0], base...), kr.Start...)
	if kr.End != nil {
		sc.upper = append(append(sc.upper[:0], base...), kr.End...)
	} else {
		sc.upper = appendPrefixEnd(sc.upper[:0], base)
	}
	sc.opts = pebble.IterOptions{LowerBound: sc.lower, UpperBound: sc.upper}
	it, err := s.db.NewIterWithContext(ctx, &sc.opts)
	if err != nil {
		return nil, s.readFault("query", name, err)
	}
	defer it.Close()
	now := s.now().UnixMilli()
	f := &sc.f
	var last []byte
	n := 0
	valid, step := it.First, it.Next
	if q.Reverse {
		valid, step = it.Last, it.Prev
	}
	steps := 0
	for ok := valid(); ok; ok = step() {
		if err := checkCtx(ctx, &steps); err != nil {
			return nil, fmt.Errorf("query %s: %w", name, err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, s.readFault("query", name, err)
		}
		if err := decodeFragment(v, f); err != nil {
			return nil, fmt.Errorf("query %s: %w", name, err)
		}
		if !fragmentLive(f, now) {
			continue
		}
		if n == q.Limit {
			// A live row follows the full page: hand out a token.
			if err := it.Error(); err != nil {
				return nil, s.readFault("query", name, err)
			}
			return last, nil
		}
		ck := it.Key()[len(base):]
		if err := fn(&t.Spec, p, ck, f, now); err != nil {
			return nil, err
		}
		n++
		if n == q.Limit {
			last = append([]byte(nil), ck...)
		}
	}
	if err := it.Error(); err != nil {
		return nil, s.readFault("query", name, err)
	}
	return nil, nil
}

// scanCheckEvery is how many keys a read steps over between two looks at
// its context: often enough that a cancelled read (its client hung up)
// stops within microseconds, rarely enough that the look costs nothing
// next to the steps.
const scanCheckEvery = 64

// checkCtx returns ctx's error on the first call and every scanCheckEvery
// calls after it, counting calls in *steps. Pebble's iterators take a
// context for tracing only, so a read that walks keys (live, expired or
// deleted alike) looks at its own.
func checkCtx(ctx context.Context, steps *int) error {
	n := *steps
	*steps = n + 1
	if n%scanCheckEvery != 0 {
		return nil
	}
	return ctx.Err()
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
	col, v, pk, err := kit.ResolveIndexLookup(spec, index, partition, value)
	if err != nil {
		return nil, err
	}
	prefix := indexPrefix(t.prefix, pk, indexOf(spec, col), v)
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, s.readFault("query index of", name, err)
	}
	defer it.Close()
	now := s.now().UnixMilli()
	var out [][]any
	var f fragment
	var key []byte
	steps := 0
	for it.First(); it.Valid(); it.Next() {
		if err := checkCtx(ctx, &steps); err != nil {
			return nil, fmt.Errorf("query index of %s: %w", name, err)
		}
		ckBytes := it.Key()[len(prefix):]
		key = rowKey(key[:0], t.prefix, pk, ckBytes)
		rv, closer, err := s.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, s.readFault("query index of", name, err)
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
	steps := 0
	for it.First(); it.Valid(); it.Next() {
		if err := checkCtx(ctx, &steps); err != nil {
			return store.TableStats{}, fmt.Errorf("stats %s: %w", name, err)
		}
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

// DiskUsage estimates the bytes a table's sstables take on disk (Pebble's
// EstimateDiskUsage over its key range): what dropping it frees, once the
// rows have left the memtable. Rows still in the memtable count for
// nothing.
func (s *Store) DiskUsage(name string) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return 0, err
	}
	n, err := s.db.EstimateDiskUsage(t.prefix, prefixEnd(t.prefix))
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", name, err)
	}
	return n, nil
}

package meter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Options configure Wrap. The zero value is valid.
type Options struct {
	// Now stamps Usage snapshots. Nil means time.Now.
	Now func() time.Time
	// Registerer receives ebb_request_units_total and
	// ebb_metered_requests_total. Nil registers nothing.
	Registerer prometheus.Registerer
	// CacheTTL is how long what the meter read of a table's spec is trusted
	// before it is read again, for a table created or dropped by another
	// process. Zero means store.DefaultCacheTTL.
	CacheTTL time.Duration
}

// Store is a store.Store that counts what every operation would bill on
// each provider model (see the package comment) and otherwise passes every
// call to the store it wraps. It is safe for concurrent use.
type Store struct {
	inner store.Store
	// last is the table looked up last, so that a run of calls on one
	// table, the common case on a hot path, skips the map. It sits next to
	// inner, on the cache line every call reads.
	last  atomic.Pointer[tableMeta]
	now   func() time.Time
	since time.Time
	c     *counters

	// tables is what the meter knows of each table, derived from its spec.
	tables *kit.SpecCache[*tableMeta]
	// scans recycles Scan's tallies, so that a metered Scan allocates
	// nothing of its own.
	scans sync.Pool
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.DeferredWriter = (*Store)(nil)
	_ store.Wrapper        = (*Store)(nil)
)

// Wrap returns a metering decorator over inner. Closing it closes inner.
// The decorator declares store.DeferredWriter itself, since it must count
// every write; other optional interfaces of inner (store.Checkpointer,
// store.HealthReporter) are found through Unwrap with store.As.
func Wrap(inner store.Store, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = store.DefaultCacheTTL
	}
	s := &Store{inner: inner, now: opts.Now, since: opts.Now().Round(0), c: &counters{}}
	s.tables = kit.NewSpecCache(inner, opts.CacheTTL, opts.Now, func(spec *store.TableSpec) *tableMeta {
		return newTableMeta(spec.Name, spec, s.c)
	})
	none := newTableMeta("", nil, s.c)
	none.dead.Store(true)
	s.last.Store(none) // so that last is never nil
	s.scans.New = func() any { return new(store.ScanTally) }
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(newCollector(s.c)); err != nil {
			return nil, fmt.Errorf("meter: register metrics: %w", err)
		}
	}
	return s, nil
}

// Unwrap returns the wrapped Store (see store.Wrapper).
func (s *Store) Unwrap() store.Store { return s.inner }

// Usage returns what has been counted so far. Its times carry no monotonic
// clock reading, so that the time between them is the same read from the
// struct as from its JSON, and a projection from either agrees.
func (s *Store) Usage() Usage { return s.c.snapshot(s.since, s.now().Round(0)) }

// meta returns what the meter knows of a table, reading its spec from the
// wrapped store the first time. A table whose spec cannot be read is
// measured without it, and looked up again next time.
func (s *Store) meta(ctx context.Context, table string) *tableMeta {
	if t := s.last.Load(); t.name == table && !t.dead.Load() {
		return t
	}
	return s.lookup(ctx, table)
}

// lookup is meta past the last table: the spec cache, which reads the
// wrapped store's spec when it has none or its copy is older than CacheTTL.
// The last table looked up is reused until this meter creates or drops a
// table: a table used without a break keeps the spec it was first read
// with, which only estimates sizes.
func (s *Store) lookup(ctx context.Context, table string) *tableMeta {
	t, err := s.tables.Get(ctx, table)
	if err != nil {
		return newTableMeta(table, nil, s.c)
	}
	s.last.Store(t)
	return t
}

// forget drops what the meter knows of a table about to be created or
// dropped.
func (s *Store) forget(table string) {
	if t, ok := s.tables.Forget(table); ok {
		t.dead.Store(true)
	}
	if t := s.last.Load(); t.name == table {
		t.dead.Store(true)
	}
}

func (s *Store) add(m Model, cl Class, op Op, u Unit, n int64) {
	if n != 0 {
		s.c[cl][op].units[m][u].Add(n)
	}
}

// request counts one store call of op with rows rows of bytes bytes.
func (s *Store) request(cl Class, op Op, rows, bytes int64) {
	s.c[cl][op].requests.Add(1)
	if rows != 0 {
		s.c[cl][op].rows.Add(rows)
	}
	if bytes != 0 {
		s.c[cl][op].bytes.Add(bytes)
	}
}

func opOf(m *store.Mutation) Op {
	switch {
	case m.If != nil:
		return OpConditional
	case m.Kind == store.Upsert:
		return OpUpsert
	case m.Kind == store.DeleteIfExpired:
		return OpSweepDelete
	}
	return OpDelete
}

// Write applies the batch to the wrapped Store and, when it succeeds,
// counts it.
func (s *Store) Write(ctx context.Context, table string, batch []store.Mutation) error {
	if err := s.inner.Write(ctx, table, batch); err != nil {
		return err
	}
	s.countWrite(ctx, table, batch)
	return nil
}

// WriteDeferred is the wrapped Store's WriteDeferred when it has one (see
// store.DeferredWriter), otherwise Write.
func (s *Store) WriteDeferred(ctx context.Context, table string, batch []store.Mutation) error {
	dw, ok := store.As[store.DeferredWriter](s.inner)
	if !ok {
		return s.Write(ctx, table, batch)
	}
	if err := dw.WriteDeferred(ctx, table, batch); err != nil {
		return err
	}
	s.countWrite(ctx, table, batch)
	return nil
}

// pairwiseMax is the largest multi-partition batch whose partitions
// countWrite compares pairwise.
const pairwiseMax = 32

// partitionSeed seeds the hashes countWrite groups partitions by.
var partitionSeed = maphash.MakeSeed()

// countWrite counts a batch as the providers would bill it: on DynamoDB a
// single-partition batch of 2 to 100 mutations is one transaction, every
// unit doubled; on Keyspaces two or more statements of one partition go out
// as a LOGGED batch, every row written twice.
func (s *Store) countWrite(ctx context.Context, table string, batch []store.Mutation) {
	if len(batch) == 0 {
		return
	}
	t := s.meta(ctx, table)
	if len(batch) == 1 {
		s.countOne(t, &batch[0])
		return
	}
	single := true
	for i := 1; i < len(batch) && single; i++ {
		single = sameTuple(batch[0].Partition, batch[i].Partition)
	}
	txn := single && len(batch) <= 100
	// shared[i]: mutation i's partition has another mutation in this
	// batch, so that Keyspaces sends them as a LOGGED batch. A small batch
	// compares partitions pairwise, cheaper than building and hashing
	// keys; a larger one counts encoded partitions in a map.
	var small [pairwiseMax]bool
	var shared []bool
	var groups map[uint64]int
	var hashes []uint64
	switch {
	case single:
	case len(batch) <= pairwiseMax:
		shared = small[:len(batch)]
		for i := range batch {
			if shared[i] {
				continue // marked, with every later row of its partition, by an earlier one
			}
			for j := i + 1; j < len(batch); j++ {
				if sameTuple(batch[i].Partition, batch[j].Partition) {
					shared[i], shared[j] = true, true
				}
			}
		}
	default:
		// Counted by a 64-bit hash of the encoded partition rather than
		// the encoding itself, so that a batch of many partitions does not
		// allocate a key string per mutation; two partitions of one batch
		// sharing a hash (about 2^-64) would only bill one row as logged.
		groups = make(map[uint64]int, len(batch))
		hashes = make([]uint64, len(batch))
		var buf []byte
		for i := range batch {
			buf = appendTuple(buf[:0], batch[i].Partition)
			hashes[i] = maphash.Bytes(partitionSeed, buf)
			groups[hashes[i]]++
		}
	}
	// A single-partition batch's partition is sized once.
	var pk, pkKs int
	if single {
		pk, pkKs = keySizes(batch[0].Partition)
	}
	// Units are summed per run of mutations of one kind and added once per
	// run: most batches are of one kind, so a write costs a handful of
	// atomic adds, not a handful per row.
	var run tally
	run.op = opOf(&batch[0])
	var total int64
	for i := range batch {
		m := &batch[i]
		if op := opOf(m); op != run.op {
			s.flush(t.class, &run)
			run = tally{op: op}
		}
		if !single {
			pk, pkKs = keySizes(m.Partition)
		}
		d, k := t.mutationBytes(m, pk, pkKs)
		logged := single
		switch {
		case shared != nil:
			logged = shared[i]
		case groups != nil:
			logged = groups[hashes[i]] >= 2
		}
		wd, wk := WriteUnits(d), WriteUnits(k)
		if txn {
			wd *= 2
		}
		if logged {
			wk *= 2
		}
		run.wd += wd
		run.wk += wk
		if m.Kind == store.Upsert && t.nativeTTL(m) {
			run.td++
			run.tk += WriteUnits(k)
		}
		run.rows++
		total += int64(d)
	}
	s.flush(t.class, &run)
	op := opOf(&batch[0])
	t.c[op].requests.Add(1)
	t.c[op].bytes.Add(total)
}

// countOne counts a batch of one mutation, outside any transaction or
// LOGGED batch. Within 1 KB on both models, it is counted by its shape.
func (s *Store) countOne(t *tableMeta, m *store.Mutation) {
	pk, pkKs := keySizes(m.Partition)
	d, k := t.mutationBytes(m, pk, pkKs)
	op := opOf(m)
	ttl := m.Kind == store.Upsert && t.nativeTTL(m)
	t.c[op].bytes.Add(int64(d))
	if d <= writeUnitBytes && k <= writeUnitBytes {
		sh := shapeOne
		if ttl {
			sh = shapeOneTTL
		}
		t.c[op].shapes[sh].Add(1)
		return
	}
	run := tally{op: op, wd: WriteUnits(d), wk: WriteUnits(k), rows: 1}
	if ttl {
		run.td, run.tk = 1, WriteUnits(k)
	}
	s.flush(t.class, &run)
	t.c[op].requests.Add(1)
}

// mutationBytes is the size of what a mutation writes: the DynamoDB item
// and the Keyspaces row of an upsert, the key of a delete. pk is the
// partition's encoded length, pkKs its values' Keyspaces size (keySizes).
func (t *tableMeta) mutationBytes(m *store.Mutation, pk, pkKs int) (d, k int) {
	ck, ckKs := keySizes(m.Clustering)
	if m.Kind == store.Upsert {
		return t.upsertBytes(m, pk, ck, pkKs, ckKs)
	}
	return dynamoKeyBytes(pk, ck), keyspacesRowBytes(t.colID, pkKs, len(m.Partition), ckKs, len(m.Clustering), 0, 0)
}

// tally is what a run of mutations of one kind cost.
type tally struct {
	op                   Op
	wd, wk, td, tk, rows int64
}

func (s *Store) flush(cl Class, r *tally) {
	s.add(ModelDynamoDB, cl, r.op, UnitWrite, r.wd)
	s.add(ModelKeyspaces, cl, r.op, UnitWrite, r.wk)
	if r.td != 0 {
		s.add(ModelDynamoDB, cl, r.op, UnitNativeTTLDelete, r.td)
		s.add(ModelKeyspaces, cl, r.op, UnitNativeTTLDelete, r.tk)
	}
	if r.rows != 0 {
		s.c[cl][r.op].rows.Add(r.rows)
	}
}

// nativeTTL reports whether native TTL would, in the end, delete the row
// an upsert writes: a row with an expiry, or any row of an index shard,
// whose rows native TTL would expire one by one where ebb drops the shard.
func (t *tableMeta) nativeTTL(m *store.Mutation) bool {
	switch t.class {
	case ClassIndexShard:
		return true
	case ClassExpiryIndex, ClassCatalog:
		return false // ebb's own bookkeeping, which native TTL would not need
	}
	if !m.ExpiresAt.IsZero() {
		return true
	}
	if !m.NoExpiry && t.spec != nil && t.spec.DefaultTTL > 0 {
		return true
	}
	for i := range m.Cells {
		if !m.Cells[i].ExpiresAt.IsZero() {
			return true
		}
	}
	return false
}

// countRead counts one read returning rows rows whose sizes sum to d bytes
// on DynamoDB and k on Keyspaces.
func (s *Store) countRead(cl Class, op Op, rows int64, d, k int) {
	rd, rk := ReadUnits(d), ReadUnits(k)
	if rd == 1 && rk == 1 {
		switch rows {
		case 0:
			s.c[cl][op].shapes[shapeNone].Add(1)
			return
		case 1:
			s.c[cl][op].shapes[shapeOne].Add(1)
		default:
			s.c[cl][op].shapes[shapeUnit].Add(1)
			s.c[cl][op].rows.Add(rows)
		}
		s.c[cl][op].bytes.Add(int64(d))
		return
	}
	s.add(ModelDynamoDB, cl, op, UnitRead, rd)
	s.add(ModelKeyspaces, cl, op, UnitRead, rk)
	s.request(cl, op, rows, int64(d))
}

// Get reads one row from the wrapped Store. A missing row still costs a
// read. It is the hottest path, written so that a row within 4 KB costs a
// comparison of the table name, one pass over its keys and values that
// sizes only text and bytes (pointSize), and two atomic adds on counters
// found through the table's metadata; the rest is out of line.
func (s *Store) Get(ctx context.Context, table string, partition, clustering []any) (store.Row, error) {
	row, err := s.inner.Get(ctx, table, partition, clustering)
	if err != nil {
		s.countGetError(ctx, table, err)
		return row, err
	}
	t := s.last.Load() // s.meta, written out
	if t.name != table || t.dead.Load() {
		t = s.lookup(ctx, table)
	}
	if d, ok := t.pointSize(&row, partition, clustering); ok {
		t.c[OpGet].shapes[shapeOne].Add(1)
		t.c[OpGet].bytes.Add(int64(d))
		return row, nil
	}
	s.countGet(t, &row, partition, clustering)
	return row, nil
}

// countGet counts a Get of a row that pointSize could not place within
// one read unit on both models, sized exactly.
func (s *Store) countGet(t *tableMeta, row *store.Row, partition, clustering []any) {
	d, k := t.rowBytes(row, partition, clustering)
	s.countRead(t.class, OpGet, 1, d, k)
}

// countGetError counts a Get that found no row.
func (s *Store) countGetError(ctx context.Context, table string, err error) {
	if errors.Is(err, store.ErrNotFound) {
		s.meta(ctx, table).c[OpGet].shapes[shapeNone].Add(1)
	}
}

// scanSizes returns the bytes the rows a Scan handed out, as tallied by
// the wrapped Store (store.Query.Tally), amount to on DynamoDB and on
// Keyspaces: the tally holds only lengths, and the sizes on each model are
// worked out once, at the end, with every present value's attribute name
// taken as two bytes and numbers at their 8 stored bytes.
func scanSizes(c *store.ScanTally, t *tableMeta, partition []any) (d, k int) {
	pk, pkKs := keySizes(partition)
	d = c.Rows*(dynamoKeyBytes(pk, 0)+1+msBytes+t.nIndexed*(2+16)) + c.ClusteringBytes + c.ValueBytes + c.Values*(2+2+msBytes)
	ckCols := 0
	if t.spec != nil {
		ckCols = len(t.spec.Clustering)
	}
	// Per row "_x", per value the value and its "_e_<col>", every expiry
	// at 8 bytes.
	cells := c.Rows + 2*c.Values
	k = keyspacesRowBytes(t.colID, c.Rows*pkKs, c.Rows*len(partition), c.ClusteringBytes, c.Rows*ckCols,
		cells, c.ValueBytes+(c.Rows+c.Values)*msBytes)
	return d, k
}

// Scan reads through the wrapped Store's Scan, which tallies the rows it
// hands out in a recycled store.ScanTally (store.Query.Tally), so that a
// metered Scan allocates nothing of its own and wraps no callback. A
// tally the caller set is added to as well.
func (s *Store) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	c := s.scans.Get().(*store.ScanTally)
	outer := q.Tally
	q.Tally = c
	next, err := s.inner.Scan(ctx, table, q, fn)
	if err == nil || c.Rows > 0 {
		t := s.meta(ctx, table)
		d, k := scanSizes(c, t, q.Partition)
		s.countRead(t.class, OpQuery, int64(c.Rows), d, k)
	}
	if outer != nil {
		outer.Rows += c.Rows
		outer.ClusteringBytes += c.ClusteringBytes
		outer.Values += c.Values
		outer.ValueBytes += c.ValueBytes
	}
	*c = store.ScanTally{}
	s.scans.Put(c)
	return next, err
}

var _ store.ScanCharger = (*Store)(nil)

// ChargeScan accounts a read answered from a kept answer as the Scan of
// table's partition that handed out tally was (see store.ScanCharger): the
// figures project what the workload costs on a backend that reads the
// store every time.
func (s *Store) ChargeScan(ctx context.Context, table string, partition []any, tally store.ScanTally) {
	t := s.meta(ctx, table)
	d, k := scanSizes(&tally, t, partition)
	s.countRead(t.class, OpQuery, int64(tally.Rows), d, k)
}

// QueryIndex reads a local index of the wrapped Store.
func (s *Store) QueryIndex(ctx context.Context, table, index string, partition []any, value any) ([][]any, error) {
	keys, err := s.inner.QueryIndex(ctx, table, index, partition, value)
	if err != nil {
		return keys, err
	}
	pk := tupleLen(partition)
	var d, k int
	for _, ck := range keys {
		d += dynamoKeyBytes(pk, tupleLen(ck)) + 2 + 16 // and the index's sort key
		k += keyspacesKeyBytes(partition, ck)
	}
	s.countRead(Classify(table), OpQueryIndex, int64(len(keys)), d, k)
	return keys, nil
}

// DeletePartition deletes a partition in the wrapped Store. It is counted
// as one read and one write unit: the rows it removes are not seen.
func (s *Store) DeletePartition(ctx context.Context, table string, partition []any) error {
	if err := s.inner.DeletePartition(ctx, table, partition); err != nil {
		return err
	}
	cl := Classify(table)
	for _, m := range Models() {
		s.add(m, cl, OpDeletePartition, UnitRead, 1)
		s.add(m, cl, OpDeletePartition, UnitWrite, 1)
	}
	s.request(cl, OpDeletePartition, 0, 0)
	return nil
}

// CreateTable creates a table in the wrapped Store.
func (s *Store) CreateTable(ctx context.Context, spec store.TableSpec) error {
	s.forget(spec.Name)
	if err := s.inner.CreateTable(ctx, spec); err != nil {
		return err
	}
	s.request(Classify(spec.Name), OpCreateTable, 0, 0)
	return nil
}

// DropTable drops a table in the wrapped Store: free on both providers,
// and counted as a request.
func (s *Store) DropTable(ctx context.Context, name string) error {
	s.forget(name)
	err := s.inner.DropTable(ctx, name)
	if err == nil {
		s.request(Classify(name), OpDropTable, 0, 0)
	}
	return err
}

// Spec returns a table's spec from the wrapped Store.
func (s *Store) Spec(ctx context.Context, name string) (store.TableSpec, error) {
	return s.inner.Spec(ctx, name)
}

// Tables lists tables of the wrapped Store.
func (s *Store) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	return s.inner.Tables(ctx, prefix)
}

// SetCapacity changes a table's capacity in the wrapped Store.
func (s *Store) SetCapacity(ctx context.Context, table string, c store.Capacity) error {
	return s.inner.SetCapacity(ctx, table, c)
}

// Stats reports what the wrapped Store physically holds.
func (s *Store) Stats(ctx context.Context, table string) (store.TableStats, error) {
	return s.inner.Stats(ctx, table)
}

// Capabilities reports the wrapped Store's capabilities.
func (s *Store) Capabilities() store.Capabilities { return s.inner.Capabilities() }

// Close closes the wrapped Store.
func (s *Store) Close() error { return s.inner.Close() }

// sameTuple reports whether two key tuples hold equal values.
func sameTuple(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case string:
			if y, ok := b[i].(string); !ok || x != y {
				return false
			}
		case []byte:
			if y, ok := b[i].([]byte); !ok || !bytes.Equal(x, y) {
				return false
			}
		case int64:
			if y, ok := b[i].(int64); !ok || x != y {
				return false
			}
		case time.Time:
			if y, ok := b[i].(time.Time); !ok || !x.Equal(y) {
				return false
			}
		default:
			if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
				return false
			}
		}
	}
	return true
}

// appendTuple appends an unambiguous encoding of a key tuple: a type tag,
// then a length-prefixed or fixed-size value.
func appendTuple(dst []byte, vals []any) []byte {
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			dst = append(dst, 's')
			dst = binary.AppendUvarint(dst, uint64(len(x)))
			dst = append(dst, x...)
		case []byte:
			dst = append(dst, 'b')
			dst = binary.AppendUvarint(dst, uint64(len(x)))
			dst = append(dst, x...)
		case int64:
			dst = binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(x))
		case time.Time:
			dst = binary.BigEndian.AppendUint64(append(dst, 't'), uint64(x.UnixMilli()))
		default:
			s := fmt.Sprint(v)
			dst = append(dst, '?')
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
	}
	return dst
}

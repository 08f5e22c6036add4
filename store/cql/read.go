package cql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Reads. Rows come back from the cluster in clustering order (ORDER BY the
// reverse for reversed queries) and are resolved against the Store's clock
// as they arrive: an expired row is skipped and the read goes on, with the
// driver's paging, until the page has Limit live rows and one more live row
// proves a next page exists. The page token is ebb's own, the encoded
// clustering key of the last row returned (as on every backend), not the
// driver's paging state: a driver state would be tied to one query text and
// page size, while a clustering key lets the next query start exactly after
// the last row with a plain range restriction, whatever was written or
// expired in between.

// Get reads one row; see store.Store.
func (s *Store) Get(ctx context.Context, name string, partition, clustering []any) (_ store.Row, err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return store.Row{}, err
	}
	defer cancel()
	defer s.observe("get", timeNow(), &err)
	sc, err := s.lookup(ctx, name)
	if err != nil {
		return store.Row{}, err
	}
	p, _, c, err := kit.ResolveRowKey(&sc.spec, partition, clustering)
	if err != nil {
		return store.Row{}, err
	}
	st := getStmt(sc, p, c)
	buf := newRowBuf(&sc.spec)
	err = s.retry.do(ctx, true, func(ctx context.Context) error {
		return s.session.Query(st.cql, st.args...).Idempotent(true).ScanContext(ctx, buf.dest...)
	})
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Row{}, store.ErrNotFound
	}
	if err != nil {
		return store.Row{}, s.tableErr(ctx, sc, "get from", err)
	}
	d, err := buf.decode(&sc.spec, s.now().UnixMilli())
	if err != nil {
		return store.Row{}, fmt.Errorf("get from %s: %w", name, err)
	}
	if !d.live {
		return store.Row{}, store.ErrNotFound
	}
	return store.Row{Partition: p, Clustering: c, Values: d.values, ExpiresAt: msTime(d.marker)}, nil
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Scan hands out a page of one partition row by row without building
// Rows, adding each to q.Tally when set; see store.Store. A read that
// fails after rows were handed out is not retried (fn would see them
// twice).
func (s *Store) Scan(ctx context.Context, name string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	var raw store.RawRow
	handed := false
	return s.scan(ctx, name, q, "scan", func() bool { return !handed }, func(sc *schema, _ []any, buf *rowBuf, now int64) (bool, error) {
		live, err := buf.raw(&sc.spec, now, &raw)
		if err != nil || !live {
			return false, err
		}
		ck, err := buf.clustering(&sc.spec)
		if err != nil {
			return false, err
		}
		raw.Clustering = kit.EncodeClustering(&sc.spec, ck)
		if q.Tally != nil {
			q.Tally.Add(&raw)
		}
		handed = true
		if err := fn(&raw); err != nil {
			return false, &callerErr{err}
		}
		return true, nil
	})
}

// callerErr carries an error returned by a Scan callback through the
// read, untouched.
type callerErr struct{ err error }

func (e *callerErr) Error() string { return e.err.Error() }
func (e *callerErr) Unwrap() error { return e.err }

// scan runs a Query, calling take for each row read until it has taken
// Limit live rows (take reports whether the row was live), then reads on to
// the next live row to decide on the page token. reset starts an attempt
// afresh, or reports that it cannot (then a failed read is not retried).
func (s *Store) scan(ctx context.Context, name string, q store.Query, op string, reset func() bool,
	take func(sc *schema, partition []any, buf *rowBuf, now int64) (bool, error)) (_ []byte, err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer s.observe(op, timeNow(), &err)
	if err := store.CheckLimit(q.Limit); err != nil {
		return nil, err
	}
	sc, err := s.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	spec := &sc.spec
	p, _, err := kit.ResolvePartition(spec, q.Partition)
	if err != nil {
		return nil, err
	}
	lo, hi, empty, err := queryBounds(spec, &q)
	if err != nil || empty {
		return nil, err
	}
	st := queryStmt(sc, p, lo, hi, q.Reverse)
	now := s.now().UnixMilli()
	// Ask for what the page needs plus the look-ahead row; the driver
	// fetches further pages while expired rows are skipped.
	pageSize := min(q.Limit+1, 5000)
	var next []byte
	var lastErr error
	err = s.retry.do(ctx, true, func(ctx context.Context) error {
		taken, last := 0, []any(nil)
		next = nil
		if !reset() {
			return fmt.Errorf("%w: %w", errNoRetry, lastErr)
		}
		buf := newRowBuf(spec)
		iter := s.session.Query(st.cql, st.args...).Idempotent(true).PageSize(pageSize).IterContext(ctx)
		for iter.Scan(buf.dest...) {
			// The driver looks at ctx only between its pages, which
			// can hold thousands of rows (expired ones skipped here).
			if err := ctx.Err(); err != nil {
				_ = iter.Close()
				return err
			}
			if taken == q.Limit {
				// Is the row after a full page live? Then there is a next
				// page, which starts after the last row taken.
				d, err := buf.decode(spec, now)
				if err != nil {
					_ = iter.Close()
					return err
				}
				if d.live {
					next = kit.EncodeClustering(spec, last)
					break
				}
				continue
			}
			ok, err := take(sc, p, buf, now)
			if err != nil {
				_ = iter.Close()
				return err
			}
			if ok {
				taken++
				if last, err = buf.clustering(spec); err != nil {
					_ = iter.Close()
					return err
				}
			}
		}
		lastErr = iter.Close()
		return lastErr
	})
	var ce *callerErr
	if errors.As(err, &ce) {
		return nil, ce.err
	}
	if err != nil {
		return nil, s.tableErr(ctx, sc, op, err)
	}
	return next, nil
}

// clustering decodes the clustering key of the row in b.
func (b *rowBuf) clustering(spec *store.TableSpec) ([]any, error) {
	ck := make([]any, b.nck)
	for i, c := range spec.Clustering {
		v, err := b.cols[i].value(c.Type)
		if err != nil {
			return nil, err
		}
		ck[i] = v
	}
	return ck, nil
}

// queryBounds turns a query's bounds and page token into the natural-order
// range the CQL relations express. The shared kit.ClusteringRange
// validates bounds and token (ErrInvalid) and says when the range is
// empty; the token, a whole clustering key, then replaces the bound on the
// side the read moves away from when it is the tighter one (a CQL query
// takes one bound per side).
func queryBounds(spec *store.TableSpec, q *store.Query) (lo, hi bound, empty bool, err error) {
	kr, err := kit.ClusteringRange(spec, q)
	if err != nil || kr.Empty {
		return bound{}, bound{}, kr.Empty, err
	}
	canon := func(b store.Bound) (bound, error) {
		if b.Values == nil {
			return bound{}, nil
		}
		v, err := kit.CheckKey(spec.Clustering[:len(b.Values)], b.Values, false)
		return bound{vals: v, inclusive: b.Inclusive}, err
	}
	if lo, err = canon(q.Low); err != nil {
		return
	}
	if hi, err = canon(q.High); err != nil {
		return
	}
	if len(q.PageToken) == 0 {
		return lo, hi, false, nil
	}
	t, err := store.DecodeClustering(spec, q.PageToken)
	if err != nil {
		return bound{}, bound{}, false, store.Errorf(store.ErrInvalid, "malformed page token")
	}
	if ascending := (spec.ClusteringOrder == store.Asc) != q.Reverse; ascending {
		if lo.vals == nil || keepToken(t, lo, 1) {
			lo = bound{vals: t}
		}
	} else if hi.vals == nil || keepToken(t, hi, -1) {
		hi = bound{vals: t}
	}
	return lo, hi, false, nil
}

// keepToken reports whether "strictly beyond token t" (dir 1: after, -1:
// before) is tighter than bound b on the same side.
func keepToken(t []any, b bound, dir int) bool {
	c := compareTuple(t[:len(b.vals)], b.vals) * dir
	return c > 0 || (c == 0 && b.inclusive)
}

// compareTuple compares canonical values in their natural order, the order
// CQL compares them in: text and blobs bytewise, integers and timestamps
// as signed numbers.
func compareTuple(a, b []any) int {
	for i := range a {
		if c := compareValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func compareValue(a, b any) int {
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case int64:
		y := b.(int64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	panic(fmt.Sprintf("cql: cannot compare %T", a)) // values are canonical
}

// statsScanRows bounds the scan Stats does to count small tables.
const statsScanRows = 10000

// Stats counts a small table's rows with a scan (rows ebb considers expired
// included, as on the embedded backend; rows the cluster's own TTL has
// removed not); a larger table reports system.size_estimates, which
// Cassandra and ScyllaDB refresh every few minutes, with partitions
// standing in for rows (Keyspaces has no estimates: it reports what the
// scan saw). Either way the figures are estimates; see store.Store.
func (s *Store) Stats(ctx context.Context, name string) (_ store.TableStats, err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return store.TableStats{}, err
	}
	defer cancel()
	defer s.observe("stats", timeNow(), &err)
	sc, err := s.lookup(ctx, name)
	if err != nil {
		return store.TableStats{}, err
	}
	exists, err := s.physicalExists(ctx, name)
	if err != nil {
		return store.TableStats{}, err
	}
	if !exists {
		s.tables.Forget(name)
		return store.TableStats{}, store.Errorf(store.ErrTableNotFound, "%q", name)
	}
	var st store.TableStats
	complete := false
	err = s.retry.do(ctx, true, func(ctx context.Context) error {
		st, complete = store.TableStats{}, true
		buf := newRowBuf(&sc.spec)
		iter := s.session.Query(fmt.Sprintf("SELECT %s FROM %s", sc.rowCols, sc.data)).
			Idempotent(true).PageSize(1000).IterContext(ctx)
		for iter.Scan(buf.dest...) {
			if err := ctx.Err(); err != nil {
				_ = iter.Close()
				return err
			}
			if st.Rows == statsScanRows {
				complete = false
				break
			}
			st.Rows++
			for i := range buf.cols {
				st.Bytes += int64(len(buf.cols[i].b))
			}
		}
		return iter.Close()
	})
	if err != nil {
		return store.TableStats{}, s.tableErr(ctx, sc, "stats of", err)
	}
	if complete || s.provider == Keyspaces {
		return st, nil
	}
	est := store.TableStats{}
	iter := s.session.Query(`SELECT partitions_count, mean_partition_size FROM system.size_estimates WHERE keyspace_name = ? AND table_name = ?`,
		s.ks, sc.spec.Name).IterContext(ctx)
	var count, mean int64
	for iter.Scan(&count, &mean) {
		est.Rows += count
		est.Bytes += count * mean
	}
	if err := iter.Close(); err != nil || est.Rows < st.Rows {
		// No estimates (not yet computed, or not readable by this user):
		// what the scan saw is a lower bound.
		return st, nil
	}
	return est, nil
}

// Package cqllegacy is the CQL legacy source of package migrate: an
// existing Apache Cassandra, ScyllaDB or Amazon Keyspaces table that
// already holds an index's events and expires them by native TTL, read
// (and, when asked, written) through a mapping of its column names onto
// the index's fields.
//
// The table is the one an application would have made for time-ordered
// events: the index id as its partition key, the timestamp as its first
// clustering column (a timestamp or bigint of Unix ms, followed by the
// event id as a clustering or regular column; or a text column
// "<13-digit Unix ms>#<event id>"), the payload in a blob or text column,
// and native TTLs (USING TTL, or the table's default_time_to_live). CQL
// TTLs are relative and per cell, so a row's expiry is read as the time of
// the read plus TTL() of one regular column (the payload's unless the
// mapping names another), and rows ebb writes get TTL = expiry - now.
//
// Both are whole seconds of the cluster's clock, so both round so that a
// row never expires before its time: a write's TTL rounds up from the
// current second, and a read counts TTL() from the second after its row
// arrived (the cluster computed TTL() at or before that moment; a page
// fetched long after the query began is not counted from its start).
// A row read back may therefore expire up to a second or two, plus the
// round trips, after the time it was written with.
package cqllegacy

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/parallel"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql"
)

// Options configure a Source.
type Options struct {
	// Now is the wall clock the cluster counts TTLs by: a row's expiry is
	// read as Now + TTL(), and a row ebb writes expiring at E gets TTL
	// E - Now. Nil means time.Now.
	Now func() time.Time
}

// Source is a CQL legacy table.
type Source struct {
	c     *cql.Client
	table string // "keyspace"."table", quoted
	m     migrate.Mapping
	// ts is the CQL type of the sort key column: "timestamp", "bigint"
	// or "text".
	ts string
	// eventClustering: the event id is the clustering column after the
	// sort key (else a regular column, or part of a text sort key).
	eventClustering bool
	payloadText     bool
	ttlCol          string
	now             func() time.Time
	// sel is the select list: index id, sort key, [event id,] payload,
	// TTL(ttl column).
	sel string
}

var _ migrate.Source = (*Source)(nil)

// Sizes of the statements a Source sends.
const (
	// writeBatch is the most rows of one partition in one unlogged batch
	// (Keyspaces' limit is 30 statements).
	writeBatch = 30
	// writeParallel bounds the batches in flight.
	writeParallel = 8
	// estimateSample is how many rows Estimate counts before it turns to
	// the cluster's size estimates.
	estimateSample = 10000
	// maxTTL is CQL's largest TTL, 20 years in seconds.
	maxTTL = 630_720_000
)

// column is one row of system_schema.columns.
type column struct {
	kind, order, typ string
	position         int
}

// Open returns the legacy table cfg names, reached through c, after
// checking that it exists and that its schema fits the mapping. The
// Source takes c over: its Close closes c (on error Open closes it).
func Open(ctx context.Context, c *cql.Client, cfg migrate.LegacyConfig, opts Options) (_ *Source, err error) {
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Kind != migrate.KindCQL {
		return nil, store.Errorf(store.ErrInvalid, "kind %q", cfg.Kind)
	}
	ks, name, _ := strings.Cut(cfg.Table, ".")
	cols := map[string]column{}
	err = c.Do(ctx, "cqllegacy: read the schema of "+cfg.Table, true, func(ctx context.Context) error {
		clear(cols)
		iter := c.Session().Query(`SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?`,
			ks, name).Idempotent(true).IterContext(ctx)
		var n string
		var col column
		for iter.Scan(&n, &col.kind, &col.position, &col.order, &col.typ) {
			cols[n] = col
		}
		return iter.Close()
	})
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, store.Errorf(store.ErrInvalid, "table %s does not exist", cfg.Table)
	}
	s := &Source{c: c, table: quote(ks) + "." + quote(name), m: *cfg.Mapping, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.fit(cfg.Table, cols); err != nil {
		return nil, err
	}
	sel := []string{quote(s.m.IndexID), quote(s.m.SortKey)}
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		sel = append(sel, quote(s.m.EventID))
	}
	sel = append(sel, quote(s.m.Payload), "TTL("+quote(s.ttlCol)+")")
	s.sel = strings.Join(sel, ", ")
	return s, nil
}

// fit checks the table's columns against the mapping and settles the
// Source's layout.
func (s *Source) fit(table string, cols map[string]column) error {
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "table %s: %s", table, fmt.Sprintf(format, args...))
	}
	text := func(t string) bool { return t == "text" || t == "varchar" || t == "ascii" }
	var parts, clustering []string
	for n, c := range cols {
		switch c.kind {
		case "partition_key":
			parts = append(parts, n)
		case "clustering":
			clustering = append(clustering, n)
		}
	}
	slices.Sort(parts)
	slices.Sort(clustering)
	id, ok := cols[s.m.IndexID]
	if !ok || id.kind != "partition_key" || len(parts) != 1 {
		return bad("the partition key must be mapping.index_id %q alone (it is %v)", s.m.IndexID, parts)
	}
	if !text(id.typ) {
		return bad("mapping.index_id %q is a %s column: want text", s.m.IndexID, id.typ)
	}
	sk, ok := cols[s.m.SortKey]
	if !ok || sk.kind != "clustering" || sk.position != 0 {
		return bad("mapping.sort_key %q must be the first clustering column", s.m.SortKey)
	}
	switch {
	case text(sk.typ):
		s.ts = "text"
		if s.m.SortKeyFormat == "" {
			s.m.SortKeyFormat = migrate.SortTimestampEventID
		}
	case sk.typ == "timestamp" || sk.typ == "bigint":
		s.ts = sk.typ
		if s.m.SortKeyFormat == "" {
			s.m.SortKeyFormat = migrate.SortTimestampMs
		}
	default:
		return bad("mapping.sort_key %q is a %s column: want text, timestamp or bigint", s.m.SortKey, sk.typ)
	}
	if (s.ts == "text") != (s.m.SortKeyFormat == migrate.SortTimestampEventID) {
		return bad("mapping.sort_key %q is a %s column, which does not hold sort_key_format %s", s.m.SortKey, sk.typ, s.m.SortKeyFormat)
	}
	wantClustering := 1
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		ev, ok := cols[s.m.EventID]
		switch {
		case s.m.EventID == "":
			return bad("a %s sort key needs mapping.event_id", sk.typ)
		case !ok || !text(ev.typ) || (ev.kind != "regular" && ev.kind != "clustering"):
			return bad("mapping.event_id %q must be a text column", s.m.EventID)
		case ev.kind == "clustering" && ev.position != 1:
			return bad("mapping.event_id %q must be the clustering column after %q", s.m.EventID, s.m.SortKey)
		case ev.kind == "clustering" && ev.order != sk.order:
			// The index orders by (timestamp, event id) both ways; a
			// table that clusters them in opposite orders cannot be
			// read in that order.
			return bad("clustering columns %q (%s) and %q (%s) must have the same clustering order", s.m.SortKey, sk.order, s.m.EventID, ev.order)
		}
		if ev.kind == "clustering" {
			s.eventClustering = true
			wantClustering = 2
		}
	}
	if len(clustering) != wantClustering {
		return bad("it has clustering columns %v; the mapping accounts for %d", clustering, wantClustering)
	}
	p, ok := cols[s.m.Payload]
	if !ok || p.kind != "regular" || (!text(p.typ) && p.typ != "blob") {
		return bad("mapping.payload %q must be a regular blob or text column", s.m.Payload)
	}
	s.payloadText = text(p.typ)
	s.ttlCol = s.m.Payload
	if s.m.TTL != "" {
		if t, ok := cols[s.m.TTL]; !ok || t.kind != "regular" {
			return bad("mapping.ttl %q must be a regular column (whose TTL() is the row's)", s.m.TTL)
		}
		s.ttlCol = s.m.TTL
	}
	return nil
}

// quote quotes a CQL identifier; mapped names hold no double quote.
func quote(name string) string { return `"` + name + `"` }

// Sort keys.

const tsDigits = 13 // Unix ms up to the year 2286

// keyArgs returns the values of the sort key (and, when it is a
// clustering column, the event id) of an event.
func (s *Source) keyArgs(tsMs int64, eventID string) []any {
	switch {
	case s.ts == "text":
		return []any{fmt.Sprintf("%0*d#%s", tsDigits, tsMs, eventID)}
	case s.eventClustering:
		return []any{s.tsValue(tsMs), eventID}
	}
	return []any{s.tsValue(tsMs)}
}

func (s *Source) tsValue(ms int64) any {
	if s.ts == "timestamp" {
		return time.UnixMilli(ms).UTC()
	}
	return ms
}

// maxTextMs is the largest timestamp a text sort key holds in tsDigits.
const maxTextMs = 9_999_999_999_999

// bound is the sort-key value of a range bound at tsMs: for text keys,
// "<ts>" sorts before every "<ts>#<event>", and a bound past what 13
// digits hold is held to them (a longer number would sort by its digits).
func (s *Source) bound(tsMs int64) any {
	if s.ts == "text" {
		return fmt.Sprintf("%0*d", tsDigits, min(tsMs, maxTextMs))
	}
	return s.tsValue(tsMs)
}

// scanRow holds one row as scanned.
type scanRow struct {
	id, sk, ev string
	ts         time.Time
	ms         int64
	blob       []byte
	text       string
	ttl        *int
	dest       []any
}

func (s *Source) newScanRow() *scanRow {
	r := &scanRow{}
	r.dest = []any{&r.id}
	switch s.ts {
	case "text":
		r.dest = append(r.dest, &r.sk)
	case "timestamp":
		r.dest = append(r.dest, &r.ts)
	default:
		r.dest = append(r.dest, &r.ms)
	}
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		r.dest = append(r.dest, &r.ev)
	}
	if s.payloadText {
		r.dest = append(r.dest, &r.text)
	} else {
		r.dest = append(r.dest, &r.blob)
	}
	r.dest = append(r.dest, &r.ttl)
	return r
}

// row decodes a scanned row; base is the wall-clock second TTL() counts
// from: the second after the row arrived (see arrived). ok is false for a row the mapping cannot
// read (a text sort key without "#"), returned to Scan with an empty index
// id for the backfill to count.
func (s *Source) row(sr *scanRow, base int64) (migrate.Row, bool) {
	var r migrate.Row
	r.IndexID, r.EventID = sr.id, sr.ev
	switch s.ts {
	case "text":
		tsPart, ev, ok := strings.Cut(sr.sk, "#")
		ms, err := strconv.ParseInt(tsPart, 10, 64)
		if !ok || err != nil {
			return migrate.Row{}, false
		}
		r.Timestamp, r.EventID = time.UnixMilli(ms).UTC(), ev
	case "timestamp":
		r.Timestamp = sr.ts.UTC()
	default:
		r.Timestamp = time.UnixMilli(sr.ms).UTC()
	}
	if s.payloadText {
		r.Payload = []byte(sr.text)
	} else {
		r.Payload = append([]byte{}, sr.blob...)
	}
	if sr.ttl != nil && *sr.ttl > 0 {
		r.ExpiresAt = time.Unix(base+int64(*sr.ttl), 0).UTC()
	}
	return r, true
}

// arrived is the second TTL() of a row just scanned counts from: now,
// rounded up. The cluster computed the row's TTL() in a whole second no
// later than now, so a row's expiry read from it is never early.
func (s *Source) arrived() int64 {
	return s.now().Add(time.Second - time.Nanosecond).Unix()
}

// Query reads one index_id's live events in the index's order, skipping
// rows whose TTL has passed at now (the cluster hides them on its own
// clock; now may run ahead of it); see migrate.Source.
func (s *Source) Query(ctx context.Context, r migrate.Range, now time.Time) ([]migrate.Row, bool, error) {
	keyCols := []string{quote(s.m.SortKey)}
	if s.eventClustering {
		keyCols = append(keyCols, quote(s.m.EventID))
	}
	tuple := "(" + strings.Join(keyCols, ", ") + ")"
	marks := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(keyCols)), ", ") + ")"
	// Bounds in tuple notation throughout: CQL takes a single-column and
	// a multi-column slice on the same columns only when both are tuples.
	// A resume point replaces the bound on its side.
	sk := "(" + quote(s.m.SortKey) + ")"
	lower, lowerArgs := sk+" >= (?)", []any{s.bound(r.Lo)}
	upper, upperArgs := sk+" < (?)", []any{s.bound(r.Hi)} // for text keys "<hi>" sorts before every "<hi>#..."
	if a := r.After; a != nil {
		after := s.keyArgs(a.Timestamp.UnixMilli(), a.EventID)
		if r.Desc {
			upper, upperArgs = tuple+" < "+marks, after
		} else {
			lower, lowerArgs = tuple+" > "+marks, after
		}
	}
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? AND %s AND %s", s.sel, s.table, quote(s.m.IndexID), lower, upper)
	args := append(append([]any{r.IndexID}, lowerArgs...), upperArgs...)
	// ORDER BY names the order wanted; the table clusters both key
	// columns the same way, so either way is its order or the reverse.
	dir := "ASC"
	if r.Desc {
		dir = "DESC"
	}
	ord := make([]string, len(keyCols))
	for i, c := range keyCols {
		ord[i] = c + " " + dir
	}
	q += " ORDER BY " + strings.Join(ord, ", ")

	var rows []migrate.Row
	more := false
	err := s.c.Do(ctx, "cqllegacy: query "+s.table, true, func(ctx context.Context) error {
		rows, more = rows[:0], false
		sr := s.newScanRow()
		iter := s.c.Session().Query(q, args...).Idempotent(true).PageSize(min(r.Limit+1, 5000)).IterContext(ctx)
		for iter.Scan(sr.dest...) {
			row, ok := s.row(sr, s.arrived())
			if !ok || (!row.ExpiresAt.IsZero() && !row.ExpiresAt.After(now)) {
				continue
			}
			if len(rows) == r.Limit {
				more = true
				break
			}
			rows = append(rows, row)
		}
		return iter.Close()
	})
	if err != nil {
		return nil, false, err
	}
	return rows, more, nil
}

// Write inserts rows, each with USING TTL from its expiry (none for a
// row without one), in unlogged batches of one partition; rows already
// expired are not written (CQL has no TTL for the past). It is
// idempotent.
func (s *Source) Write(ctx context.Context, rows []migrate.Row) error {
	cols := []string{quote(s.m.IndexID), quote(s.m.SortKey)}
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		cols = append(cols, quote(s.m.EventID))
	}
	cols = append(cols, quote(s.m.Payload))
	ins := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) USING TTL ?", s.table, strings.Join(cols, ", "),
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
	now := s.now().Unix()
	type stmt struct{ args []any }
	byID := map[string][]stmt{}
	var ids []string
	for _, r := range rows {
		ttl := int64(0)
		if !r.ExpiresAt.IsZero() {
			// The cluster expires a cell at its write second + TTL:
			// rounding up from the current second never expires a row
			// before its time.
			ttl = (r.ExpiresAt.UnixMilli() - now*1000 + 999) / 1000
			if ttl <= 0 {
				continue
			}
			if ttl > maxTTL {
				return store.Errorf(store.ErrInvalid, "row %s/%s expires %s, past CQL's longest TTL", r.IndexID, r.EventID, r.ExpiresAt.Format(time.RFC3339))
			}
		}
		args := []any{r.IndexID}
		ms := r.Timestamp.UnixMilli()
		if s.ts == "text" {
			args = append(args, fmt.Sprintf("%0*d#%s", tsDigits, ms, r.EventID))
		} else {
			args = append(args, s.tsValue(ms), r.EventID)
		}
		if s.payloadText {
			args = append(args, string(r.Payload))
		} else {
			args = append(args, append([]byte{}, r.Payload...))
		}
		args = append(args, int(ttl))
		if _, ok := byID[r.IndexID]; !ok {
			ids = append(ids, r.IndexID)
		}
		byID[r.IndexID] = append(byID[r.IndexID], stmt{args})
	}
	var tasks []func(context.Context) error
	for _, id := range ids {
		stmts := byID[id]
		for lo := 0; lo < len(stmts); lo += writeBatch {
			chunk := stmts[lo:min(lo+writeBatch, len(stmts))]
			tasks = append(tasks, func(ctx context.Context) error {
				return s.c.Do(ctx, "cqllegacy: write "+s.table, true, func(ctx context.Context) error {
					if len(chunk) == 1 {
						return s.c.Session().Query(ins, chunk[0].args...).Idempotent(true).ExecContext(ctx)
					}
					b := s.c.Session().Batch(gocql.UnloggedBatch)
					for _, st := range chunk {
						b.Query(ins, st.args...)
					}
					return b.ExecContext(ctx)
				})
			})
		}
	}
	if len(tasks) == 0 {
		return nil
	}
	return parallel.Run(ctx, writeParallel, tasks)
}

// Scan pages through the table in the cluster's token order; the cursor
// is the driver's paging state. Rows the mapping cannot read are returned
// with an empty index id, for the backfill to count.
func (s *Source) Scan(ctx context.Context, cursor []byte, limit int) ([]migrate.Row, []byte, float64, error) {
	q := fmt.Sprintf("SELECT %s FROM %s", s.sel, s.table)
	var rows []migrate.Row
	var next []byte
	err := s.c.Do(ctx, "cqllegacy: scan "+s.table, true, func(ctx context.Context) error {
		rows, next = rows[:0], nil
		sr := s.newScanRow()
		// A paging state turns the driver's paging off: one page only.
		iter := s.c.Session().Query(q).Idempotent(true).PageSize(limit).PageState(cursor).IterContext(ctx)
		for iter.Scan(sr.dest...) {
			r, ok := s.row(sr, s.arrived())
			if !ok {
				r = migrate.Row{}
			}
			rows = append(rows, r)
		}
		if err := iter.Close(); err != nil {
			return err
		}
		if st := iter.PageState(); len(st) > 0 {
			next = append([]byte{}, st...)
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, err
	}
	// No CQL provider reports read units per request: count one per row.
	return rows, next, float64(len(rows)), nil
}

// Estimate counts the table's rows when it holds up to 10,000; past that
// it extrapolates system.size_estimates' partition count (Cassandra and
// ScyllaDB) by the rows per partition it counted, and on Keyspaces, which
// keeps no estimates, it returns the 10,000 (a lower bound).
func (s *Source) Estimate(ctx context.Context) (int64, error) {
	var rows, parts int64
	err := s.c.Do(ctx, "cqllegacy: count "+s.table, true, func(ctx context.Context) error {
		rows, parts = 0, 0
		iter := s.c.Session().Query(fmt.Sprintf("SELECT %s FROM %s LIMIT %d", quote(s.m.IndexID), s.table, estimateSample)).
			Idempotent(true).PageSize(5000).IterContext(ctx)
		var id, last string
		for iter.Scan(&id) {
			if rows == 0 || id != last {
				parts++
				last = id
			}
			rows++
		}
		return iter.Close()
	})
	if err != nil {
		return 0, err
	}
	if rows < estimateSample || s.c.Provider() == cql.Keyspaces {
		return rows, nil
	}
	ks, name := s.names()
	var total int64
	err = s.c.Do(ctx, "cqllegacy: size estimates of "+s.table, true, func(ctx context.Context) error {
		total = 0
		iter := s.c.Session().Query(`SELECT partitions_count FROM system.size_estimates WHERE keyspace_name = ? AND table_name = ?`, ks, name).
			Idempotent(true).IterContext(ctx)
		var n int64
		for iter.Scan(&n) {
			total += n
		}
		return iter.Close()
	})
	if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		// No estimates to read (not computed yet, or not readable by
		// this user): the count is a lower bound.
		return rows, nil
	}
	// The last partition counted may be partial: the ratio errs low.
	if est := total * rows / parts; est > rows {
		return est, nil
	}
	return rows, nil
}

// Close closes the Client the Source was opened with. It is safe to call
// more than once.
func (s *Source) Close() error { return s.c.Close() }

// names returns the keyspace and table, unquoted.
func (s *Source) names() (string, string) {
	ks, name, _ := strings.Cut(s.table, ".")
	return strings.Trim(ks, `"`), strings.Trim(name, `"`)
}

package cql

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// This file builds the data statements. Builders are pure: they take a
// table's schema and resolved mutations and return CQL text with its bound
// arguments, so that they are tested against golden files (testdata/)
// without a cluster. Every value is bound, never inlined, so a statement's
// text depends only on the table and the shape of the mutation, and the
// driver prepares each shape once.

// stmt is one CQL statement and its arguments.
type stmt struct {
	cql  string
	args []any
}

// bindValue converts a canonical value to what the driver binds: a
// timestamp as its Unix milliseconds (the driver would encode the zero
// time.Time, 0001-01-01, as an empty value).
func bindValue(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.UnixMilli()
	}
	return v
}

func appendKey(args []any, vals []any) []any {
	for _, v := range vals {
		args = append(args, bindValue(v))
	}
	return args
}

// writeParams are what every non-conditional write statement carries: the
// write timestamp (Unix µs) and what the TTL is computed from.
type writeParams struct {
	ts     int64
	now    int64 // Unix ms of the Store's clock
	margin int64 // ms
	cap    int64 // s
}

func (w writeParams) ttl(exp int64) int64 { return ttlSeconds(exp, w.now, w.margin, w.cap) }

// forMutation returns the parameters of r's statements: an
// store.ExpiryDrop upsert is written with TTL 0, which overrides the
// table's default_time_to_live, so that only dropping the table removes
// it.
func (w writeParams) forMutation(r *kit.ResolvedMutation) writeParams {
	if r.Expiry == store.ExpiryDrop {
		w.cap = 0
	}
	return w
}

func orNever(exp int64) int64 {
	if exp == 0 {
		return never
	}
	return exp
}

// upsertStmts renders an Upsert. Cells are grouped by expiry, one UPDATE per
// distinct expiry (a statement has one TTL); the row marker goes with the
// row's expiry. Indexed cells get a companion entry each. cond, when not
// empty, is an IF clause (with its arguments) for a conditional write: the
// statements then carry no timestamp (Paxos sets it) and no index entries
// (written before, by the caller).
func upsertStmts(sc *schema, r *kit.ResolvedMutation, w writeParams, cond *stmt) []stmt {
	w = w.forMutation(r)
	type group struct {
		exp   int64
		cells []kit.ResolvedCell
	}
	rowExp := orNever(r.ExpiresAt)
	groups := []group{{exp: rowExp}}
	for _, c := range r.Cells {
		e := orNever(c.ExpiresAt)
		i := slices.IndexFunc(groups, func(g group) bool { return g.exp == e })
		if i < 0 {
			groups = append(groups, group{exp: e})
			i = len(groups) - 1
		}
		groups[i].cells = append(groups[i].cells, c)
	}
	var out []stmt
	for gi, g := range groups {
		var sets []string
		var args []any
		// A table whose rows never expire carries no TTL (Keyspaces
		// refuses one where TTL is off).
		var using []string
		if cond == nil {
			using = append(using, "TIMESTAMP ?")
			args = append(args, w.ts)
		}
		if !sc.spec.NeverExpires {
			using = append(using, "TTL ?")
			args = append(args, w.ttl(g.exp))
		}
		if gi == 0 {
			sets = append(sets, quote(colMarker)+" = ?")
			args = append(args, g.exp)
		}
		for _, c := range g.cells {
			name := sc.spec.Values[c.Col].Name
			sets = append(sets, quote(name)+" = ?", quote(expCol(name))+" = ?")
			args = append(args, bindValue(c.Value), g.exp)
		}
		args = appendKey(appendKey(args, r.Partition), r.Clustering)
		clause := ""
		if len(using) > 0 {
			clause = " USING " + strings.Join(using, " AND ")
		}
		q := fmt.Sprintf("UPDATE %s%s SET %s WHERE %s", sc.data, clause, strings.Join(sets, ", "), sc.rowWhere)
		if cond != nil && gi == 0 {
			q += cond.cql
			args = append(args, cond.args...)
		}
		out = append(out, stmt{q, args})
	}
	if cond == nil {
		out = append(out, indexEntryStmts(sc, r, w)...)
	}
	return out
}

// indexEntryStmts renders the companion entries of an Upsert's indexed
// cells: keyed by (partition, index, value, clustering), holding the cell's
// expiry, with the cell's TTL and timestamp.
func indexEntryStmts(sc *schema, r *kit.ResolvedMutation, w writeParams) []stmt {
	w = w.forMutation(r)
	var out []stmt
	for _, c := range r.Cells {
		ix := indexOf(&sc.spec, c.Col)
		if ix < 0 {
			continue
		}
		e := orNever(c.ExpiresAt)
		using, args := "TIMESTAMP ? AND TTL ?", []any{w.ts, w.ttl(e), e}
		if sc.spec.NeverExpires {
			using, args = "TIMESTAMP ?", []any{w.ts, e}
		}
		args = appendKey(args, r.Partition)
		args = append(args, ix, indexKey(kit.RawValue(c.Value)))
		args = appendKey(args, r.Clustering)
		out = append(out, stmt{fmt.Sprintf("UPDATE %s USING %s SET %s = ? WHERE %s",
			sc.index, using, quote(colIndexExp), indexWhere(sc)), args})
	}
	return out
}

// indexKey is the "_v" of a companion entry for a value's raw bytes: the
// bytes themselves when shorter than a SHA-256 digest, else the digest, so
// a large value (up to a whole row) does not become a clustering key over
// CQL's 64 KiB limit. The two forms differ in length, so the mapping stays
// one to one (up to SHA-256 collisions); lookups verify against the row in
// any case.
func indexKey(raw []byte) []byte {
	if len(raw) < sha256.Size {
		return raw
	}
	sum := sha256.Sum256(raw)
	return sum[:]
}

// indexWhere is the primary key of a companion entry.
func indexWhere(sc *schema) string {
	w := sc.partWhere + " AND " + quote(colIndexNo) + " = ? AND " + quote(colIndexVal) + " = ?"
	for _, c := range sc.spec.Clustering {
		w += " AND " + quote(c.Name) + " = ?"
	}
	return w
}

// indexOf returns the number of the index on value column col, or -1.
func indexOf(spec *store.TableSpec, col int) int {
	name := spec.Values[col].Name
	return slices.IndexFunc(spec.Indexes, func(ix store.IndexSpec) bool { return ix.Column == name })
}

// deleteRowStmt renders a DeleteRow: a row tombstone (a partition tombstone
// for a table without clustering columns, which has one row per
// partition). ts is the tombstone's timestamp.
func deleteRowStmt(sc *schema, r *kit.ResolvedMutation, ts int64, cond *stmt) stmt {
	var args []any
	using := " USING TIMESTAMP ?"
	if cond != nil {
		using = ""
	} else {
		args = append(args, ts)
	}
	args = appendKey(appendKey(args, r.Partition), r.Clustering)
	q := fmt.Sprintf("DELETE FROM %s%s WHERE %s", sc.data, using, sc.rowWhere)
	if cond != nil {
		q += cond.cql
		args = append(args, cond.args...)
	}
	return stmt{q, args}
}

// deleteCellsStmt renders a DeleteCells: tombstones for the values and
// their expiries, which do not create a row that did not exist.
func deleteCellsStmt(sc *schema, r *kit.ResolvedMutation, ts int64, cond *stmt) stmt {
	var cols []string
	for _, c := range r.Cells {
		name := sc.spec.Values[c.Col].Name
		cols = append(cols, quote(name), quote(expCol(name)))
	}
	var args []any
	using := " USING TIMESTAMP ?"
	if cond != nil {
		using = ""
	} else {
		args = append(args, ts)
	}
	args = appendKey(appendKey(args, r.Partition), r.Clustering)
	q := fmt.Sprintf("DELETE %s FROM %s%s WHERE %s", strings.Join(cols, ", "), sc.data, using, sc.rowWhere)
	if cond != nil {
		q += cond.cql
		args = append(args, cond.args...)
	}
	return stmt{q, args}
}

// deleteIndexEntryStmt removes one companion entry with a tombstone at ts:
// only the entry as written at or before ts goes, never a later rewrite.
func deleteIndexEntryStmt(sc *schema, partition []any, ix int, raw []byte, clustering []any, ts int64) stmt {
	args := []any{ts}
	args = appendKey(args, partition)
	args = append(args, ix, raw)
	args = appendKey(args, clustering)
	return stmt{fmt.Sprintf("DELETE FROM %s USING TIMESTAMP ? WHERE %s", sc.index, indexWhere(sc)), args}
}

// deletePartitionStmts renders DeletePartition: partition tombstones in the
// table and its companion, one mutation.
func deletePartitionStmts(sc *schema, partition []any, ts int64) []stmt {
	out := []stmt{{fmt.Sprintf("DELETE FROM %s USING TIMESTAMP ? WHERE %s", sc.data, sc.partWhere), appendKey([]any{ts}, partition)}}
	if sc.index != "" {
		out = append(out, stmt{fmt.Sprintf("DELETE FROM %s USING TIMESTAMP ? WHERE %s", sc.index, sc.partWhere), appendKey([]any{ts}, partition)})
	}
	return out
}

// getStmt reads one row.
func getStmt(sc *schema, partition, clustering []any) stmt {
	return stmt{fmt.Sprintf("SELECT %s FROM %s WHERE %s", sc.rowCols, sc.data, sc.rowWhere),
		appendKey(appendKey(nil, partition), clustering)}
}

// bound is one end of a clustering range in the natural order of the
// values: rows whose clustering prefix of len(vals) is beyond (inclusive:
// at or beyond) vals. Nil vals means unbounded.
type bound struct {
	vals      []any
	inclusive bool
}

// queryStmt reads a slice of a partition: multi-column relations on the
// clustering columns, compared in natural order whatever the clustering
// order, and ORDER BY the reverse of the clustering order when reversed.
func queryStmt(sc *schema, partition []any, lo, hi bound, reverse bool) stmt {
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s", sc.rowCols, sc.data, sc.partWhere)
	args := appendKey(nil, partition)
	rel := func(b bound, op string) {
		if b.vals == nil {
			return
		}
		if b.inclusive {
			op += "="
		}
		cols := make([]string, len(b.vals))
		marks := make([]string, len(b.vals))
		for i := range b.vals {
			cols[i] = quote(sc.spec.Clustering[i].Name)
			marks[i] = "?"
		}
		q += fmt.Sprintf(" AND (%s) %s (%s)", strings.Join(cols, ", "), op, strings.Join(marks, ", "))
		args = appendKey(args, b.vals)
	}
	rel(lo, ">")
	rel(hi, "<")
	if reverse && len(sc.spec.Clustering) > 0 {
		dir := "DESC"
		if sc.spec.ClusteringOrder == store.Desc {
			dir = "ASC"
		}
		var ord []string
		for _, c := range sc.spec.Clustering {
			ord = append(ord, quote(c.Name)+" "+dir)
		}
		q += " ORDER BY " + strings.Join(ord, ", ")
	}
	return stmt{q, args}
}

// rowsIn is the WHERE clause selecting some rows of one partition by
// clustering key: the partition, and an IN on the clustering columns
// (a tuple IN when there are several).
func rowsIn(sc *schema, partition []any, keys [][]any) (string, []any) {
	args := appendKey(nil, partition)
	n := len(sc.spec.Clustering)
	if n == 0 {
		return sc.partWhere, args
	}
	marks := make([]string, len(keys))
	for i, k := range keys {
		m := strings.Repeat("?, ", n)
		marks[i] = m[:len(m)-2]
		if n > 1 {
			marks[i] = "(" + marks[i] + ")"
		}
		args = appendKey(args, k)
	}
	lhs := quote(sc.spec.Clustering[0].Name)
	if n > 1 {
		lhs = "(" + sc.ckList + ")"
	}
	return fmt.Sprintf("%s AND %s IN (%s)", sc.partWhere, lhs, strings.Join(marks, ", ")), args
}

// expiryReadStmt reads what DeleteIfExpired and conditions decide on: the
// clustering key, the marker and every value's expiry, each with its write
// time, and the indexed values (so their entries can go with the row).
func expiryReadStmt(sc *schema, partition []any, keys [][]any) stmt {
	cols := []string{}
	if sc.ckList != "" {
		cols = append(cols, sc.ckList)
	}
	cols = append(cols, quote(colMarker), "WRITETIME("+quote(colMarker)+")")
	for _, v := range sc.spec.Values {
		e := quote(expCol(v.Name))
		cols = append(cols, e, "WRITETIME("+e+")")
	}
	for _, ix := range sc.spec.Indexes {
		cols = append(cols, quote(ix.Column))
	}
	where, args := rowsIn(sc, partition, keys)
	return stmt{fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), sc.data, where), args}
}

// deleteObservedStmt deletes a row as it was observed: the tombstone
// carries the newest write time read, so it removes exactly the versions
// that were seen expired and nothing written after them.
func deleteObservedStmt(sc *schema, partition, clustering []any, ts int64) stmt {
	args := appendKey(appendKey([]any{ts}, partition), clustering)
	return stmt{fmt.Sprintf("DELETE FROM %s USING TIMESTAMP ? WHERE %s", sc.data, sc.rowWhere), args}
}

// indexLookupStmt reads the companion entries of one value, in clustering
// order, with their expiry and write time.
func indexLookupStmt(sc *schema, partition []any, ix int, raw []byte) stmt {
	cols := []string{}
	if sc.ckList != "" {
		cols = append(cols, sc.ckList)
	}
	cols = append(cols, quote(colIndexExp), "WRITETIME("+quote(colIndexExp)+")")
	args := append(appendKey(nil, partition), ix, raw)
	return stmt{fmt.Sprintf("SELECT %s FROM %s WHERE %s AND %s = ? AND %s = ?", strings.Join(cols, ", "), sc.index,
		sc.partWhere, quote(colIndexNo), quote(colIndexVal)), args}
}

// indexVerifyStmt reads the indexed value of candidate rows.
func indexVerifyStmt(sc *schema, partition []any, col int, keys [][]any) stmt {
	name := sc.spec.Values[col].Name
	cols := []string{}
	if sc.ckList != "" {
		cols = append(cols, sc.ckList)
	}
	cols = append(cols, quote(name), quote(expCol(name)))
	where, args := rowsIn(sc, partition, keys)
	return stmt{fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), sc.data, where), args}
}

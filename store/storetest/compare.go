package storetest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
)

// This file holds the comparisons the suite uses: values as the contract
// defines them (timestamps in UTC at millisecond precision, empty bytes not
// nil), rows, and the natural order of key tuples.

func isErr(err, target error) bool { return err != nil && errors.Is(err, target) }

// valueEqual reports whether got is the canonical form of want; a nil want
// means the cell must be absent.
func valueEqual(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(time.UnixMilli(w.UnixMilli())) && g.Location() == time.UTC
	case []byte:
		g, ok := got.([]byte)
		return ok && g != nil && bytes.Equal(w, g)
	default:
		return want == got
	}
}

func tupleEqual(want, got []any) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !valueEqual(want[i], got[i]) {
			return false
		}
	}
	return true
}

func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("%q", x)
	case []byte:
		if x == nil {
			return "[]byte(nil)"
		}
		return fmt.Sprintf("0x%x", x)
	case time.Time:
		return x.Format("2006-01-02T15:04:05.000000000Z07:00")
	}
	return fmt.Sprintf("%v", v)
}

func fmtTuple(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmtValue(v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func fmtRow(r store.Row) string {
	exp := "none"
	if !r.ExpiresAt.IsZero() {
		exp = r.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s%s=%s exp=%s", fmtTuple(r.Partition), fmtTuple(r.Clustering), fmtTuple(r.Values), exp)
}

// checkRow compares one row's keys and values (not its expiry).
func (e *env) checkRow(got store.Row, partition, clustering []any, values ...any) {
	e.t.Helper()
	if !tupleEqual(partition, got.Partition) || !tupleEqual(clustering, got.Clustering) || !tupleEqual(values, got.Values) {
		e.t.Fatalf("row %s, want %s%s=%s", fmtRow(got), fmtTuple(partition), fmtTuple(clustering), fmtTuple(values))
	}
}

// checkExpiry compares a row marker's expiry; a zero want means none.
func (e *env) checkExpiry(got store.Row, want time.Time) {
	e.t.Helper()
	switch {
	case want.IsZero() && !got.ExpiresAt.IsZero():
		e.t.Fatalf("row %s has an expiry, want none", fmtRow(got))
	case !want.IsZero() && !got.ExpiresAt.Equal(want):
		e.t.Fatalf("row %s, want expiry %s", fmtRow(got), want.Format(time.RFC3339Nano))
	}
}

func keysOf(rows []store.Row) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = r.Clustering
	}
	return out
}

// checkKeys compares clustering keys, in order.
func (e *env) checkKeys(what string, got, want [][]any) {
	e.t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = tupleEqual(want[i], got[i])
	}
	if ok {
		return
	}
	fmtKeys := func(ks [][]any) string {
		parts := make([]string, len(ks))
		for i, k := range ks {
			parts[i] = fmtTuple(k)
		}
		return strings.Join(parts, " ")
	}
	e.t.Fatalf("%s: got %d keys\n  %s\nwant %d keys\n  %s", what, len(got), fmtKeys(got), len(want), fmtKeys(want))
}

// compareNatural orders tuples (or a tuple and a prefix, comparing only
// the common length) by the natural order of their values: the order the
// contract's Bound values are given in.
func compareNatural(a, b []any) int {
	for i := range min(len(a), len(b)) {
		var r int
		switch x := a[i].(type) {
		case string:
			r = cmp.Compare(x, b[i].(string))
		case []byte:
			r = bytes.Compare(x, b[i].([]byte))
		case int64:
			r = cmp.Compare(x, b[i].(int64))
		case time.Time:
			r = cmp.Compare(x.UnixMilli(), b[i].(time.Time).UnixMilli())
		}
		if r != 0 {
			return r
		}
	}
	return 0
}

// inBounds reports whether a clustering key lies within a query's bounds,
// with prefix semantics: an inclusive prefix bound takes every key with
// that prefix, an exclusive one none of them.
func inBounds(k []any, lo, hi store.Bound) bool {
	if lo.Values != nil {
		c := compareNatural(k, lo.Values)
		if c < 0 || (c == 0 && !lo.Inclusive) {
			return false
		}
	}
	if hi.Values != nil {
		c := compareNatural(k, hi.Values)
		if c > 0 || (c == 0 && !hi.Inclusive) {
			return false
		}
	}
	return true
}

// scanOrder sorts keys into the order a query returns them: the table's
// clustering order, reversed when reverse is set.
func scanOrder(keys [][]any, order store.Order, reverse bool) {
	desc := (order == store.Desc) != reverse
	sortKeys(keys, desc)
}

func sortKeys(keys [][]any, desc bool) {
	slices.SortStableFunc(keys, func(a, b []any) int {
		if desc {
			return compareNatural(b, a)
		}
		return compareNatural(a, b)
	})
}

package storetest

import (
	"errors"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
)

var invalidCases = []testCase{
	{"RefusedWritesWriteNothing", testRefusedWrites},
	{"BadThirdMutation", testBadThirdMutation},
	{"UnknownTable", testUnknownTable},
	{"EmptyBatch", testEmptyBatch},
}

type badMutation struct {
	name string
	m    store.Mutation
	want error
}

// badMutations are refused by every backend. Their partition is "bad", so
// that a test can check nothing was written there.
func badMutations(caps store.Capabilities) []badMutation {
	good := func() store.Mutation { return up("bad", 1, "a", cell("v", "x"), cell("n", int64(1))) }
	with := func(f func(m *store.Mutation)) store.Mutation { m := good(); f(&m); return m }
	longKey := strings.Repeat("k", store.MaxKeyBytes+1)
	out := []badMutation{
		{"missing partition", with(func(m *store.Mutation) { m.Partition = nil }), store.ErrInvalid},
		{"partition arity", with(func(m *store.Mutation) { m.Partition = []any{"bad", "x"} }), store.ErrInvalid},
		{"empty partition key", with(func(m *store.Mutation) { m.Partition = []any{""} }), store.ErrInvalid},
		{"partition type", with(func(m *store.Mutation) { m.Partition = []any{[]byte("bad")} }), store.ErrInvalid},
		{"missing clustering column", with(func(m *store.Mutation) { m.Clustering = []any{int64(1)} }), store.ErrInvalid},
		{"missing clustering", with(func(m *store.Mutation) { m.Clustering = nil }), store.ErrInvalid},
		{"clustering int not int64", with(func(m *store.Mutation) { m.Clustering = []any{1, "a"} }), store.ErrInvalid},
		{"clustering nil value", with(func(m *store.Mutation) { m.Clustering = []any{int64(1), nil} }), store.ErrInvalid},
		{"value wrong type", with(func(m *store.Mutation) { m.Cells[1].Value = "1" }), store.ErrInvalid},
		{"value int not int64", with(func(m *store.Mutation) { m.Cells[1].Value = 1 }), store.ErrInvalid},
		{"value nil", with(func(m *store.Mutation) { m.Cells[0].Value = nil }), store.ErrInvalid},
		{"timestamp pointer", with(func(m *store.Mutation) { m.Cells = []store.Cell{cell("ts", &ts1)} }), store.ErrInvalid},
		{"text invalid UTF-8", with(func(m *store.Mutation) { m.Cells[0].Value = "bad \xc3\x28" }), store.ErrInvalid},
		{"unknown column", with(func(m *store.Mutation) { m.Cells = append(m.Cells, cell("nope", "x")) }), store.ErrInvalid},
		{"key column as value", with(func(m *store.Mutation) { m.Cells = append(m.Cells, cell("c2", "x")) }), store.ErrInvalid},
		{"column twice", with(func(m *store.Mutation) { m.Cells = append(m.Cells, cell("v", "y")) }), store.ErrInvalid},
		{"NoExpiry and ExpiresAt", with(func(m *store.Mutation) { m.NoExpiry, m.ExpiresAt = true, Epoch.Add(time.Hour) }), store.ErrInvalid},
		{"expiry before 1970", with(func(m *store.Mutation) { m.ExpiresAt = time.UnixMilli(-1000) }), store.ErrInvalid},
		{"cell expiry before 1970", with(func(m *store.Mutation) { m.Cells[0].ExpiresAt = ts2 }), store.ErrInvalid},
		{"unknown kind", with(func(m *store.Mutation) { m.Kind = 17 }), store.ErrInvalid},
		{"DeleteRow with cells", with(func(m *store.Mutation) { m.Kind = store.DeleteRow }), store.ErrInvalid},
		{"DeleteCells of nothing", with(func(m *store.Mutation) { m.Kind, m.Cells = store.DeleteCells, nil }), store.ErrInvalid},
		{"DeleteCells unknown column", with(func(m *store.Mutation) {
			m.Kind, m.Cells = store.DeleteCells, []store.Cell{{Column: "v"}, {Column: "nope"}}
		}), store.ErrInvalid},
		{"DeleteIfExpired with cells", with(func(m *store.Mutation) { m.Kind = store.DeleteIfExpired }), store.ErrInvalid},
		{"partition key too large", with(func(m *store.Mutation) { m.Partition = []any{longKey} }), store.ErrTooLarge},
		{"clustering key too large", with(func(m *store.Mutation) { m.Clustering = []any{int64(1), longKey} }), store.ErrTooLarge},
	}
	if caps.MaxRowBytes > 0 {
		out = append(out,
			badMutation{"value over MaxRowBytes", with(func(m *store.Mutation) {
				m.Cells = append(m.Cells, cell("b", make([]byte, caps.MaxRowBytes+1)))
			}), store.ErrTooLarge},
			badMutation{"cells together over MaxRowBytes", with(func(m *store.Mutation) {
				m.Cells = []store.Cell{cell("v", strings.Repeat("v", caps.MaxRowBytes/2+1)), cell("b", make([]byte, caps.MaxRowBytes/2+1))}
			}), store.ErrTooLarge})
	}
	return out
}

func testRefusedWrites(e *env) {
	spec := e.create("refused", wideSpec(store.Asc, 0))
	if e.caps.MaxRowBytes <= 0 {
		e.t.Logf("%s reports no MaxRowBytes: oversize rows are not checked", e.caps.Backend)
	}
	e.write(spec.Name, up("other", 1, "a", cell("v", "keep"), cell("n", int64(1))))
	before, exact := e.stats(spec.Name)
	for _, c := range badMutations(e.caps) {
		err := e.s.Write(e.ctx, spec.Name, []store.Mutation{c.m})
		if !isErr(err, c.want) {
			e.t.Errorf("%s: Write = %v, want %v", c.name, err, c.want)
			continue
		}
		var me *store.MutationError
		if !errors.As(err, &me) || me.Index != 0 {
			e.t.Errorf("%s: Write = %v, want a *store.MutationError with Index 0", c.name, err)
		}
	}
	if rows := e.all(spec.Name, "bad"); len(rows) != 0 {
		e.t.Fatalf("refused writes left %d rows, first %s", len(rows), fmtRow(rows[0]))
	}
	e.checkRow(e.mustGet(spec.Name, []any{"other"}, key(1, "a")), []any{"other"}, key(1, "a"), "keep", int64(1), nil, nil)
	if after, _ := e.stats(spec.Name); exact && after.Rows != before.Rows {
		e.t.Fatalf("refused writes changed exact Stats from %+v to %+v", before, after)
	}
	// A row just under the limit (1 KiB of slack for keys and metadata) is
	// accepted and reads back whole: the limit a backend reports is one it
	// can actually store.
	if e.caps.MaxRowBytes > 2048 {
		n := e.caps.MaxRowBytes - 1024
		e.write(spec.Name, up("big", 1, "a", cell("b", make([]byte, n))))
		if got := e.mustGet(spec.Name, []any{"big"}, key(1, "a")).Values[colB].([]byte); len(got) != n {
			e.t.Fatalf("row of %d bytes read back with %d", n, len(got))
		}
	}
}

// testBadThirdMutation sends batches whose first two mutations are fine
// (in the same partition as the third and in another) and whose third is
// not: the error names index 2 and nothing at all is written, atomic
// backend or not, since the whole batch is validated first.
func testBadThirdMutation(e *env) {
	spec := e.create("badthird", wideSpec(store.Desc, 0))
	for _, c := range badMutations(e.caps) {
		batch := []store.Mutation{
			up("bad", 7, "first", cell("v", "x")),
			up("elsewhere", 7, "second", cell("v", "x")),
			c.m,
			up("elsewhere", 8, "fourth", cell("v", "x")),
		}
		err := e.s.Write(e.ctx, spec.Name, batch)
		var me *store.MutationError
		if !isErr(err, c.want) || !errors.As(err, &me) || me.Index != 2 {
			e.t.Errorf("%s: Write = %v, want %v as a *store.MutationError with Index 2", c.name, err, c.want)
		}
	}
	for _, part := range []string{"bad", "elsewhere"} {
		if rows := e.all(spec.Name, part); len(rows) != 0 {
			e.t.Fatalf("refused batches wrote %d rows into %q, first %s", len(rows), part, fmtRow(rows[0]))
		}
	}
	if ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", []any{"elsewhere"}, "x"); err != nil || len(ks) != 0 {
		e.t.Fatalf("refused batches left index entries: %v, %v", ks, err)
	}
	if st, exact := e.stats(spec.Name); exact && st.Rows != 0 {
		e.t.Fatalf("refused batches left rows on disk: %+v", st)
	}
}

func testUnknownTable(e *env) {
	name := tableName("nosuch")
	err := e.s.Write(e.ctx, name, []store.Mutation{up("p", 1, "a", cell("v", "x"))})
	if !isErr(err, store.ErrTableNotFound) {
		e.t.Fatalf("Write to a missing table: %v, want ErrTableNotFound", err)
	}
	if infos := e.tables(name); len(infos) != 0 {
		e.t.Fatalf("Write to a missing table created %v", tableNames(infos))
	}
	for _, bad := range []string{"", "has space", "9x", strings.Repeat("x", 100)} {
		if err := e.s.Write(e.ctx, bad, []store.Mutation{up("p", 1, "a", cell("v", "x"))}); !isErr(err, store.ErrTableNotFound) && !isErr(err, store.ErrInvalid) {
			e.t.Errorf("Write to the invalid table name %q: %v, want ErrTableNotFound or ErrInvalid", bad, err)
		}
	}
}

// testEmptyBatch: an empty batch has nothing to apply; it may succeed or
// be refused as invalid, but it neither panics nor writes.
func testEmptyBatch(e *env) {
	spec := e.create("emptybatch", wideSpec(store.Asc, 0))
	for _, batch := range [][]store.Mutation{nil, {}} {
		if err := e.s.Write(e.ctx, spec.Name, batch); err != nil && !isErr(err, store.ErrInvalid) {
			e.t.Fatalf("Write of an empty batch: %v, want nil or ErrInvalid", err)
		}
	}
	if st, exact := e.stats(spec.Name); exact && st.Rows != 0 {
		e.t.Fatalf("empty batch wrote rows: %+v", st)
	}
}

package storetest

import (
	"slices"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

var tableCases = []testCase{
	{"CreateIdempotent", testCreateIdempotent},
	{"CreateRefusesBadSpecs", testCreateRefusesBadSpecs},
	{"DropTable", testDropTable},
	{"Spec", testSpec},
	{"TablesPrefix", testTablesPrefix},
	{"SetCapacity", testSetCapacity},
	{"Stats", testStats},
	{"Close", testClose},
}

func (e *env) tables(prefix string) []store.TableInfo {
	e.t.Helper()
	infos, err := e.s.Tables(e.ctx, prefix)
	if err != nil {
		e.t.Fatalf("Tables(%q): %v", prefix, err)
	}
	return infos
}

func tableNames(infos []store.TableInfo) []string {
	out := make([]string, len(infos))
	for i, ti := range infos {
		out[i] = ti.Spec.Name
	}
	return out
}

func testCreateIdempotent(e *env) {
	spec := e.create("idem", wideSpec(store.Desc, time.Hour))
	if err := e.s.CreateTable(e.ctx, spec); err != nil {
		e.t.Fatalf("CreateTable with the identical spec: %v", err)
	}
	e.write(spec.Name, up("p", 1, "a", cell("v", "x")))
	// A second identical create must not reset the table.
	if err := e.s.CreateTable(e.ctx, spec); err != nil {
		e.t.Fatalf("CreateTable with the identical spec: %v", err)
	}
	e.mustGet(spec.Name, []any{"p"}, key(1, "a"))

	changes := map[string]func(s *store.TableSpec){
		"order":       func(s *store.TableSpec) { s.ClusteringOrder = store.Asc },
		"default TTL": func(s *store.TableSpec) { s.DefaultTTL = time.Minute },
		"no TTL":      func(s *store.TableSpec) { s.DefaultTTL = 0 },
		"extra column": func(s *store.TableSpec) {
			s.Values = append(slices.Clone(s.Values), store.Column{Name: "z", Type: store.TypeText})
		},
		"column type": func(s *store.TableSpec) { s.Values = slices.Clone(s.Values); s.Values[colN].Type = store.TypeTimestamp },
		"no indexes":  func(s *store.TableSpec) { s.Indexes = nil },
		"clustering":  func(s *store.TableSpec) { s.Clustering = s.Clustering[:1] },
	}
	for what, change := range changes {
		other := spec
		change(&other)
		if err := e.s.CreateTable(e.ctx, other); !isErr(err, store.ErrTableExists) {
			e.t.Errorf("CreateTable with a different %s: %v, want ErrTableExists", what, err)
		}
	}
	infos := e.tables(spec.Name)
	if len(infos) != 1 || !infos[0].Spec.Equal(spec) {
		e.t.Fatalf("Tables(%q) = %+v, want the original spec", spec.Name, infos)
	}
	if infos[0].State != store.Active {
		e.t.Errorf("table state %v after CreateTable returned, want active", infos[0].State)
	}
	e.mustGet(spec.Name, []any{"p"}, key(1, "a"))
}

func testCreateRefusesBadSpecs(e *env) {
	prefix := tableName("bad")
	good := wideSpec(store.Asc, 0)
	good.Name = prefix + "_ok"
	cases := map[string]func(s *store.TableSpec){
		"name starts with a digit": func(s *store.TableSpec) { s.Name = "9" + prefix },
		"name with a dash":         func(s *store.TableSpec) { s.Name = prefix + "-x" },
		"name with a dot":          func(s *store.TableSpec) { s.Name = prefix + ".x" },
		"name too long":            func(s *store.TableSpec) { s.Name = prefix + strings.Repeat("x", store.MaxNameLen) },
		"empty name":               func(s *store.TableSpec) { s.Name = "" },
		"no partition key":         func(s *store.TableSpec) { s.PartitionKey = nil },
		"no value column":          func(s *store.TableSpec) { s.Values = nil },
		"duplicate column": func(s *store.TableSpec) {
			s.Values = append(slices.Clone(s.Values), store.Column{Name: "c1", Type: store.TypeText})
		},
		"bad column name": func(s *store.TableSpec) {
			s.Values = append(slices.Clone(s.Values), store.Column{Name: "has space", Type: store.TypeText})
		},
		"unknown type": func(s *store.TableSpec) {
			s.Values = append(slices.Clone(s.Values), store.Column{Name: "z", Type: 0})
		},
		"negative TTL":     func(s *store.TableSpec) { s.DefaultTTL = -time.Second },
		"index on a key":   func(s *store.TableSpec) { s.Indexes = []store.IndexSpec{{Name: "ix", Column: "c2"}} },
		"index on nothing": func(s *store.TableSpec) { s.Indexes = []store.IndexSpec{{Name: "ix", Column: "zz"}} },
		"column indexed twice": func(s *store.TableSpec) {
			s.Indexes = []store.IndexSpec{{Name: "i1", Column: "v"}, {Name: "i2", Column: "v"}}
		},
	}
	for what, change := range cases {
		spec := good
		change(&spec)
		if err := e.s.CreateTable(e.ctx, spec); !isErr(err, store.ErrInvalid) {
			e.t.Errorf("CreateTable with %s: %v, want ErrInvalid", what, err)
		}
	}
	if infos := e.tables(prefix); len(infos) != 0 {
		e.t.Fatalf("refused specs left tables behind: %v", tableNames(infos))
	}
}

func testDropTable(e *env) {
	spec := e.create("drop", wideSpec(store.Asc, 0))
	e.write(spec.Name, up("p", 1, "a", cell("v", "red")), up("p", 2, "b", cell("v", "red")), up("q", 1, "a", cell("n", int64(1))))
	if err := e.s.DropTable(e.ctx, spec.Name); err != nil {
		e.t.Fatalf("DropTable: %v", err)
	}
	if err := e.s.DropTable(e.ctx, spec.Name); err != nil {
		e.t.Fatalf("second DropTable: %v, want nil (idempotent)", err)
	}
	if err := e.s.DropTable(e.ctx, tableName("never")); err != nil {
		e.t.Fatalf("DropTable of a table that never existed: %v, want nil", err)
	}
	if infos := e.tables(spec.Name); len(infos) != 0 {
		e.t.Fatalf("dropped table still listed: %v", tableNames(infos))
	}
	gone := map[string]error{}
	_, gone["Query"] = kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Limit: 10})
	_, gone["Scan"] = e.s.Scan(e.ctx, spec.Name, store.Query{Partition: []any{"p"}, Limit: 10}, func(*store.RawRow) error { return nil })
	_, gone["Spec"] = e.s.Spec(e.ctx, spec.Name)
	_, gone["Get"] = e.s.Get(e.ctx, spec.Name, []any{"p"}, key(1, "a"))
	_, gone["QueryIndex"] = e.s.QueryIndex(e.ctx, spec.Name, "by_v", []any{"p"}, "red")
	gone["Write"] = e.s.Write(e.ctx, spec.Name, []store.Mutation{up("p", 3, "c", cell("v", "x"))})
	gone["DeletePartition"] = e.s.DeletePartition(e.ctx, spec.Name, []any{"p"})
	gone["SetCapacity"] = e.s.SetCapacity(e.ctx, spec.Name, store.Capacity{Mode: store.Provisioned, ReadUnits: 1, WriteUnits: 1})
	_, gone["Stats"] = e.s.Stats(e.ctx, spec.Name)
	for op, err := range gone {
		if !isErr(err, store.ErrTableNotFound) {
			e.t.Errorf("%s on a dropped table: %v, want ErrTableNotFound", op, err)
		}
	}

	// Re-created, with the same or another spec, the table starts empty.
	if err := e.s.CreateTable(e.ctx, spec); err != nil {
		e.t.Fatalf("re-create: %v", err)
	}
	for _, p := range []string{"p", "q"} {
		if rows := e.all(spec.Name, p); len(rows) != 0 {
			e.t.Fatalf("re-created table has %d rows in %q, first %s", len(rows), p, fmtRow(rows[0]))
		}
	}
	if ks, err := e.s.QueryIndex(e.ctx, spec.Name, "by_v", []any{"p"}, "red"); err != nil || len(ks) != 0 {
		e.t.Fatalf("re-created table: QueryIndex = %v, %v; want no keys", ks, err)
	}
	if st, exact := e.stats(spec.Name); exact && (st.Rows != 0) {
		e.t.Fatalf("re-created table: exact Stats %+v, want 0 rows", st)
	}
	if err := e.s.DropTable(e.ctx, spec.Name); err != nil {
		e.t.Fatal(err)
	}
	other := wideSpec(store.Desc, time.Minute)
	other.Name = spec.Name
	if err := e.s.CreateTable(e.ctx, other); err != nil {
		e.t.Fatalf("re-create with another spec: %v", err)
	}
	if infos := e.tables(spec.Name); len(infos) != 1 || !infos[0].Spec.Equal(other) {
		e.t.Fatalf("after re-create with another spec Tables = %+v", infos)
	}
	if rows := e.all(spec.Name, "p"); len(rows) != 0 {
		e.t.Fatalf("re-created table has %d rows", len(rows))
	}
}

func testTablesPrefix(e *env) {
	prefix := tableName("pre")
	names := []string{prefix + "_b", prefix + "_a", prefix + "x", prefix + "_c", prefix + "_a_2"}
	for _, n := range names {
		spec := wideSpec(store.Asc, 0)
		spec.Name = n
		if err := e.s.CreateTable(e.ctx, spec); err != nil {
			e.t.Fatalf("CreateTable %s: %v", n, err)
		}
	}
	check := func(p string, want ...string) {
		e.t.Helper()
		if got := tableNames(e.tables(p)); !slices.Equal(got, want) {
			e.t.Fatalf("Tables(%q) = %v, want %v", p, got, want)
		}
	}
	check(prefix+"_", prefix+"_a", prefix+"_a_2", prefix+"_b", prefix+"_c")
	check(prefix, prefix+"_a", prefix+"_a_2", prefix+"_b", prefix+"_c", prefix+"x")
	check(prefix+"_a", prefix+"_a", prefix+"_a_2")
	check(prefix + "_zz")
	check(prefix+"_b", prefix+"_b")

	all := tableNames(e.tables(""))
	if !slices.IsSorted(all) {
		e.t.Fatalf("Tables(\"\") not sorted: %v", all)
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			e.t.Fatalf("Tables(\"\") lacks %s", n)
		}
	}
	if err := e.s.DropTable(e.ctx, prefix+"_b"); err != nil {
		e.t.Fatal(err)
	}
	check(prefix+"_", prefix+"_a", prefix+"_a_2", prefix+"_c")
}

func testSetCapacity(e *env) {
	spec := e.create("cap", wideSpec(store.Asc, 0))
	if err := e.s.SetCapacity(e.ctx, tableName("nocap"), store.Capacity{}); !isErr(err, store.ErrTableNotFound) {
		e.t.Errorf("SetCapacity of a missing table: %v, want ErrTableNotFound", err)
	}
	prov := store.Capacity{Mode: store.Provisioned, ReadUnits: 5, WriteUnits: 7}
	if err := e.s.SetCapacity(e.ctx, spec.Name, prov); err != nil {
		e.t.Fatalf("SetCapacity provisioned: %v", err)
	}
	// The data is untouched by a capacity change.
	e.write(spec.Name, up("p", 1, "a", cell("v", "x")))
	infos := e.tables(spec.Name)
	if len(infos) != 1 {
		e.t.Fatalf("Tables(%q) = %v", spec.Name, tableNames(infos))
	}
	if got := infos[0].Capacity; got.Mode != store.Provisioned || got.ReadUnits != 5 || got.WriteUnits != 7 {
		e.t.Fatalf("capacity after SetCapacity(%+v) = %+v", prov, got)
	}
	if err := e.s.SetCapacity(e.ctx, spec.Name, store.Capacity{Mode: store.OnDemand}); err != nil {
		if isErr(err, store.ErrCapacityLimit) {
			return // a provider limit, reported as the contract asks
		}
		e.t.Fatalf("SetCapacity on-demand: %v", err)
	}
	if got := e.tables(spec.Name)[0].Capacity; got.Mode != store.OnDemand {
		e.t.Fatalf("capacity after switching back to on-demand = %+v", got)
	}
	e.mustGet(spec.Name, []any{"p"}, key(1, "a"))
}

func testStats(e *env) {
	spec := e.create("stats", wideSpec(store.Asc, 0))
	if _, err := e.s.Stats(e.ctx, tableName("nostats")); !isErr(err, store.ErrTableNotFound) {
		e.t.Errorf("Stats of a missing table: %v, want ErrTableNotFound", err)
	}
	st, exact := e.stats(spec.Name)
	if st.Rows < 0 || st.Bytes < 0 {
		e.t.Fatalf("Stats of an empty table: %+v", st)
	}
	if exact && st.Rows != 0 {
		e.t.Fatalf("exact Stats of an empty table: %+v", st)
	}
	soon := Epoch.Add(time.Second)
	var batch []store.Mutation
	for i := range 10 {
		m := up("p", int64(i), "r", cell("v", "x"), cell("b", make([]byte, 100)))
		if i%3 == 0 {
			m.ExpiresAt = soon
		}
		batch = append(batch, m)
	}
	e.write(spec.Name, batch...)
	e.write(spec.Name, up("q", 0, "r", cell("n", int64(1))))
	e.clk.Set(soon)
	st, exact = e.stats(spec.Name)
	if !exact {
		if st.Rows < 0 || st.Bytes < 0 {
			e.t.Fatalf("estimated Stats: %+v", st)
		}
		return
	}
	// Expired rows still on disk are counted: Stats is about storage.
	if st.Rows != 11 {
		e.t.Fatalf("exact Stats after 11 rows (4 expired) = %+v, want 11 rows", st)
	}
	// The rows hold over 1000 bytes of values; exact figures cannot say
	// less, wherever the backend keeps them (memtable or files).
	if st.Bytes < 1000 {
		e.t.Errorf("exact Stats after writing 1000 bytes of values = %+v, want Bytes >= 1000", st)
	}
	e.write(spec.Name,
		store.Mutation{Kind: store.DeleteRow, Partition: []any{"p"}, Clustering: key(1, "r")},
		store.Mutation{Kind: store.DeleteIfExpired, Partition: []any{"p"}, Clustering: key(3, "r")})
	if st, _ = e.stats(spec.Name); st.Rows != 9 {
		e.t.Fatalf("exact Stats after deleting 2 of 11 rows = %+v, want 9 rows", st)
	}
	if err := e.s.DeletePartition(e.ctx, spec.Name, []any{"p"}); err != nil {
		e.t.Fatal(err)
	}
	if st, _ = e.stats(spec.Name); st.Rows != 1 {
		e.t.Fatalf("exact Stats after DeletePartition = %+v, want 1 row", st)
	}
}

// testSpec checks the single-table lookup: a table's spec as created, and
// ErrTableNotFound for a table never created or dropped; after a drop and
// a create with another spec, the new spec.
func testSpec(e *env) {
	spec := e.create("spec", wideSpec(store.Desc, time.Hour))
	got, err := e.s.Spec(e.ctx, spec.Name)
	if err != nil || !got.Equal(spec) {
		e.t.Fatalf("Spec of a created table = %+v, %v; want %+v", got, err, spec)
	}
	if _, err := e.s.Spec(e.ctx, tableName("never")); !isErr(err, store.ErrTableNotFound) {
		e.t.Fatalf("Spec of a table never created: %v, want ErrTableNotFound", err)
	}
	// A lookup must not create anything: the table is still missing.
	if infos := e.tables(tableName("never")); len(infos) != 0 {
		e.t.Fatalf("Spec listed a table: %v", tableNames(infos))
	}
	if err := e.s.DropTable(e.ctx, spec.Name); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.s.Spec(e.ctx, spec.Name); !isErr(err, store.ErrTableNotFound) {
		e.t.Fatalf("Spec of a dropped table: %v, want ErrTableNotFound", err)
	}
	other := wideSpec(store.Asc, 0)
	other.Name = spec.Name
	other.Values = append(slices.Clone(other.Values), store.Column{Name: "z", Type: store.TypeText})
	if err := e.s.CreateTable(e.ctx, other); err != nil {
		e.t.Fatalf("re-create with another spec: %v", err)
	}
	if got, err := e.s.Spec(e.ctx, spec.Name); err != nil || !got.Equal(other) {
		e.t.Fatalf("Spec after re-create with another spec = %+v, %v; want %+v", got, err, other)
	}
	// The new spec decodes the new rows: a Query of the re-created table
	// reads its five value columns.
	e.write(spec.Name, up("p", 1, "a", cell("z", "zz")))
	if rows := e.all(spec.Name, "p"); len(rows) != 1 || len(rows[0].Values) != 5 || rows[0].Values[4] != "zz" {
		e.t.Fatalf("re-created table reads %d rows, first %v", len(rows), rows)
	}
}

func testClose(e *env) {
	spec := e.create("close", wideSpec(store.Asc, 0))
	e.write(spec.Name, up("p", 1, "a", cell("v", "x")))
	if err := e.s.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	if err := e.s.Close(); err != nil && !isErr(err, store.ErrClosed) {
		e.t.Fatalf("second Close: %v, want nil or ErrClosed", err)
	}
	closed := map[string]error{}
	closed["Write"] = e.s.Write(e.ctx, spec.Name, []store.Mutation{up("p", 2, "a", cell("v", "x"))})
	_, closed["Get"] = e.s.Get(e.ctx, spec.Name, []any{"p"}, key(1, "a"))
	_, closed["Query"] = kit.Query(e.ctx, e.s, spec.Name, store.Query{Partition: []any{"p"}, Limit: 1})
	_, closed["Tables"] = e.s.Tables(e.ctx, "")
	_, closed["Spec"] = e.s.Spec(e.ctx, spec.Name)
	closed["CreateTable"] = e.s.CreateTable(e.ctx, spec)
	for op, err := range closed {
		if !isErr(err, store.ErrClosed) {
			e.t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
}

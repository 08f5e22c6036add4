package cql

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// The statement builders are tested against golden files in testdata/,
// read by github.com/cockroachdb/datadriven as Pebble's tests read theirs:
// each case is a command with key=value arguments, "----", and the
// expected output up to a blank line. Run
//
//	go test ./store/cql/ -run TestGolden -rewrite
//
// to regenerate the expected outputs after a deliberate change (the
// -rewrite flag is datadriven's), and review the diff.

// goldenSpecs are the table shapes the golden files name.
var goldenSpecs = map[string]store.TableSpec{
	// wide: text partition key, (bigint, text) clustering ascending, one
	// value column of each type, two indexes.
	"wide": {
		Name:         "wide",
		PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
		Clustering:   []store.Column{{Name: "c1", Type: store.TypeInt64}, {Name: "c2", Type: store.TypeText}},
		Values: []store.Column{{Name: "v", Type: store.TypeText}, {Name: "n", Type: store.TypeInt64},
			{Name: "b", Type: store.TypeBytes}, {Name: "ts", Type: store.TypeTimestamp}},
		Indexes: []store.IndexSpec{{Name: "by_v", Column: "v"}, {Name: "by_b", Column: "b"}},
	},
	// desc_ttl: descending clustering with a default TTL, no index.
	"desc_ttl": {
		Name:            "Events_1719446400",
		PartitionKey:    []store.Column{{Name: "index_id", Type: store.TypeText}, {Name: "bucket", Type: store.TypeInt64}},
		Clustering:      []store.Column{{Name: "timestamp", Type: store.TypeTimestamp}, {Name: "event_id", Type: store.TypeBytes}},
		ClusteringOrder: store.Desc,
		Values:          []store.Column{{Name: "payload", Type: store.TypeBytes}},
		DefaultTTL:      90*time.Minute + 500*time.Millisecond,
	},
	// single: no clustering columns (one row per partition), an index.
	"single": {
		Name:         "single",
		PartitionKey: []store.Column{{Name: "k", Type: store.TypeText}, {Name: "n", Type: store.TypeInt64}},
		Values:       []store.Column{{Name: "v", Type: store.TypeText}, {Name: "w", Type: store.TypeInt64}},
		Indexes:      []store.IndexSpec{{Name: "by_v", Column: "v"}},
	},
	// meta: ebb's own metadata table.
	"meta": store.MetaSpec,
	// list: a list feature version's shape, every row with the TTL.
	"list": {
		Name:            "list_0123456789abcdef0123456789abcdef",
		PartitionKey:    []store.Column{{Name: "entity_id", Type: store.TypeText}},
		Clustering:      []store.Column{{Name: "item_key", Type: store.TypeText}},
		ClusteringOrder: store.Desc,
		Values:          []store.Column{{Name: "value", Type: store.TypeBytes}},
		DefaultTTL:      7 * 24 * time.Hour,
		Indexes:         []store.IndexSpec{{Name: "by_value", Column: "value"}},
	},
	// expiry: the expiry index's shape.
	"expiry": {
		Name:         expiryIndexTable,
		PartitionKey: []store.Column{{Name: "window", Type: store.TypeInt64}, {Name: "shard", Type: store.TypeInt64}},
		Clustering:   []store.Column{{Name: "due", Type: store.TypeTimestamp}, {Name: "tbl", Type: store.TypeText}, {Name: "id", Type: store.TypeBytes}},
		Values:       []store.Column{{Name: "pk", Type: store.TypeBytes}, {Name: "ck", Type: store.TypeBytes}, {Name: "expires_at", Type: store.TypeTimestamp}},
	},
}

// goldenOverrides are the table options an operator set: override=ROLE
// replaces ROLE's with a grace period of ten minutes, empty=ROLE with
// none.
func goldenOverrides(t *testing.T, args map[string]string) map[Role]string {
	m := map[Role]string{}
	if r, ok := args["override"]; ok {
		m[Role(r)] = "gc_grace_seconds = 600"
	}
	if r, ok := args["empty"]; ok {
		m[Role(r)] = ""
	}
	if err := validateTableOptions(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// forever is wide with one index and no row that ever expires (an index
// shard's promise): no TTL anywhere, and on Keyspaces TTL left off.
func init() {
	f := goldenSpecs["wide"]
	f.Name, f.Indexes, f.NeverExpires = "forever", f.Indexes[:1], true
	goldenSpecs["forever"] = f
}

var (
	goldenNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	goldenTS  = int64(1772366400000000) // µs, the first write timestamp
)

// goldenMutations are the mutations the write and cond commands name, on
// the wide spec unless the name says otherwise.
func goldenMutations() map[string]store.Mutation {
	p, k := []any{"p1"}, []any{int64(7), "a"}
	hour := goldenNow.Add(time.Hour)
	return map[string]store.Mutation{
		"upsert-row-expiry": {Partition: p, Clustering: k, ExpiresAt: hour,
			Cells: []store.Cell{{Column: "v", Value: "red"}, {Column: "n", Value: int64(-3)}}},
		"upsert-no-expiry": {Partition: p, Clustering: k, NoExpiry: true,
			Cells: []store.Cell{{Column: "ts", Value: time.UnixMilli(-62135596800000).UTC()}, {Column: "b", Value: []byte{}}}},
		"upsert-cell-expiries": {Partition: p, Clustering: k, ExpiresAt: hour, Cells: []store.Cell{
			{Column: "v", Value: "short", ExpiresAt: goldenNow.Add(1500 * time.Millisecond)},
			{Column: "n", Value: int64(1)},
			{Column: "b", Value: []byte("forever-ish"), ExpiresAt: goldenNow.Add(30 * 24 * time.Hour)}}},
		"upsert-expired": {Partition: p, Clustering: k, ExpiresAt: goldenNow.Add(-time.Hour),
			Cells: []store.Cell{{Column: "n", Value: int64(0)}}},
		"upsert-far-future": {Partition: p, Clustering: k, ExpiresAt: goldenNow.AddDate(30, 0, 0),
			Cells: []store.Cell{{Column: "n", Value: int64(0)}}},
		"upsert-marker-only": {Partition: p, Clustering: k},
		"upsert-long-indexed": {Partition: p, Clustering: k, NoExpiry: true,
			Cells: []store.Cell{{Column: "b", Value: []byte(strings.Repeat("x", 40))}}},
		"delete-row":    {Kind: store.DeleteRow, Partition: p, Clustering: k},
		"delete-cells":  {Kind: store.DeleteCells, Partition: p, Clustering: k, Cells: []store.Cell{{Column: "v"}, {Column: "ts"}}},
		"single-upsert": {Partition: []any{"key", int64(-3)}, Cells: []store.Cell{{Column: "v", Value: "one"}}},
		"single-delete": {Kind: store.DeleteRow, Partition: []any{"key", int64(-3)}},
		"desc-default-ttl": {Partition: []any{"idx", int64(17)}, Clustering: []any{goldenNow, []byte{0xff, 0}},
			Cells: []store.Cell{{Column: "payload", Value: []byte("{}")}}},
	}
}

// goldenConditions are the conditions the cond command names.
var goldenConditions = map[string]store.Condition{
	"absent":    {Kind: store.IfAbsent},
	"exists":    {Kind: store.IfExists},
	"equals-n":  {Kind: store.IfEquals, Column: "n", Value: int64(5)},
	"equals-ts": {Kind: store.IfEquals, Column: "ts", Value: goldenNow},
}

func fmtArg(a any) string {
	switch x := a.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	case []byte:
		return fmt.Sprintf("0x%x", x)
	}
	return fmt.Sprint(a)
}

func fmtStmts(stmts ...stmt) string {
	var b strings.Builder
	for _, st := range stmts {
		b.WriteString(st.cql)
		b.WriteString("\n")
		if len(st.args) > 0 {
			args := make([]string, len(st.args))
			for i, a := range st.args {
				args[i] = fmtArg(a)
			}
			b.WriteString("  args: " + strings.Join(args, ", ") + "\n")
		}
	}
	return b.String()
}

func goldenProvider(t *testing.T, args map[string]string) Provider {
	switch args["provider"] {
	case "", "cassandra":
		return Cassandra
	case "scylladb":
		return ScyllaDB
	case "keyspaces":
		return Keyspaces
	}
	t.Fatalf("unknown provider %q", args["provider"])
	return 0
}

func goldenSchema(t *testing.T, args map[string]string) *schema {
	name := args["spec"]
	if name == "" {
		name = "wide"
	}
	spec, ok := goldenSpecs[name]
	if !ok {
		t.Fatalf("unknown spec %q", name)
	}
	return newSchema("ks", spec)
}

func resolveOne(t *testing.T, sc *schema, m store.Mutation) *kit.ResolvedMutation {
	rs, err := kit.ResolveBatch(&sc.spec, []store.Mutation{m}, goldenNow, maxRowBytes)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return &rs[0]
}

// goldenPartition is a partition key of the schema's shape.
func goldenPartition(sc *schema) []any {
	if len(sc.spec.PartitionKey) == 2 {
		return []any{"key", int64(-3)}
	}
	return []any{"p1"}
}

func goldenParams() writeParams {
	return writeParams{ts: goldenTS, now: goldenNow.UnixMilli(), margin: DefaultTTLMargin.Milliseconds(), cap: ttlCap(goldenNow)}
}

// runGolden runs one command and returns its output.
func runGolden(t *testing.T, cmd string, args map[string]string) string {
	sc := goldenSchema(t, args)
	muts := goldenMutations()
	mut := func() store.Mutation {
		m, ok := muts[args["case"]]
		if !ok {
			t.Fatalf("unknown mutation case %q", args["case"])
		}
		return m
	}
	switch cmd {
	case "ddl":
		p := goldenProvider(t, args)
		out := createTableCQL("ks", sc.spec, p, DefaultTTLMargin, goldenOverrides(t, args))
		out = append(out, dropTableCQL("ks", sc.spec.Name)...)
		return strings.Join(out, "\n") + "\n"
	case "keyspace":
		p := goldenProvider(t, args)
		return createKeyspaceCQL("ks", p, args["replication"]) + "\n" + createCatalogCQL("ks", p) + "\n"
	case "capacity":
		// mode= is the target, from= the current mode (the other one when
		// omitted), warm=R/W the target's warm throughput.
		capOf := func(mode string) store.Capacity {
			if mode == "provisioned" {
				return store.Capacity{Mode: store.Provisioned, ReadUnits: 5, WriteUnits: 7}
			}
			return store.Capacity{}
		}
		c := capOf(args["mode"])
		from, ok := args["from"]
		if !ok {
			from = map[bool]string{true: "on_demand", false: "provisioned"}[args["mode"] == "provisioned"]
		}
		cur := capOf(from)
		if w, ok := args["warm"]; ok {
			if _, err := fmt.Sscanf(w, "%d/%d", &c.WarmRead, &c.WarmWrite); err != nil {
				t.Fatalf("warm=%q: %v", w, err)
			}
		}
		out := capacityCQL("ks", sc.spec.Name, cur, c)
		if out == "" {
			out = "(nothing to send)"
		}
		return out + "\n"
	case "write":
		r := resolveOne(t, sc, mut())
		w := goldenParams()
		switch r.Kind {
		case store.Upsert:
			return fmtStmts(upsertStmts(sc, r, w, nil)...)
		case store.DeleteRow:
			return fmtStmts(deleteRowStmt(sc, r, w.ts, nil))
		case store.DeleteCells:
			return fmtStmts(deleteCellsStmt(sc, r, w.ts, nil))
		}
	case "cond":
		m := mut()
		c := goldenConditions[args["if"]]
		m.If = &c
		r := resolveOne(t, sc, m)
		w := goldenParams()
		var cond stmt
		if r.Cond.Kind == store.IfEquals {
			cond = equalsCond(sc, r.Cond, w.now)
		} else {
			// A snapshot: marker expired a second ago, first value absent,
			// the rest live for an hour.
			snap := []any{w.now - 1000, nil}
			for range sc.spec.Values[1:] {
				snap = append(snap, w.now+3600_000)
			}
			cond = snapshotCond(sc, snap)
		}
		var out []stmt
		if r.Kind == store.Upsert {
			out = append(out, indexEntryStmts(sc, r, w)...)
			out = append(out, upsertStmts(sc, r, w, &cond)...)
		} else if r.Kind == store.DeleteRow {
			out = append(out, deleteRowStmt(sc, r, 0, &cond))
		} else {
			out = append(out, deleteCellsStmt(sc, r, 0, &cond))
		}
		if r.Cond.Kind != store.IfEquals {
			out = append(out, snapshotReadStmt(sc, r.Partition, r.Clustering))
		}
		return fmtStmts(out...)
	case "query":
		q := store.Query{Partition: goldenPartition(sc), Limit: 10, Reverse: args["reverse"] == "true"}
		switch args["range"] {
		case "prefix":
			q.Low = store.Bound{Values: []any{int64(1)}, Inclusive: true}
			q.High = store.Bound{Values: []any{int64(9), "z"}}
		case "token":
			q.Low = store.Bound{Values: []any{int64(1)}, Inclusive: true}
			q.PageToken = kit.EncodeClustering(&sc.spec, []any{int64(3), "m"})
		}
		lo, hi, empty, err := queryBounds(&sc.spec, &q)
		if err != nil || empty {
			return fmt.Sprintf("empty=%v err=%v\n", empty, err)
		}
		return fmtStmts(queryStmt(sc, q.Partition, lo, hi, q.Reverse))
	case "get":
		r := resolveOne(t, sc, mut())
		return fmtStmts(getStmt(sc, r.Partition, r.Clustering))
	case "delete-partition":
		return fmtStmts(deletePartitionStmts(sc, goldenPartition(sc), goldenTS)...)
	case "delete-if-expired":
		keys := [][]any{{int64(1), "a"}, {int64(2), "b"}}
		if len(sc.spec.Clustering) == 0 {
			keys = [][]any{{}}
		}
		p := goldenPartition(sc)
		return fmtStmts(expiryReadStmt(sc, p, keys),
			deleteObservedStmt(sc, p, keys[0], goldenTS),
			deleteIndexEntryStmt(sc, p, 0, []byte("red"), keys[0], goldenTS))
	case "index-lookup":
		keys := [][]any{{int64(1), "a"}, {int64(2), "b"}}
		if len(sc.spec.Clustering) == 0 {
			keys = [][]any{{}}
		}
		p := goldenPartition(sc)
		return fmtStmts(indexLookupStmt(sc, p, 0, []byte("red")),
			indexVerifyStmt(sc, p, 0, keys))
	}
	t.Fatalf("unknown command %q", cmd)
	return ""
}

// goldenArgs returns a case's arguments by key; an argument without a
// value maps to "".
func goldenArgs(td *datadriven.TestData) map[string]string {
	args := make(map[string]string, len(td.CmdArgs))
	for _, a := range td.CmdArgs {
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	return args
}

// goldenFiles lists the golden files, and fails the test when there are
// none.
func goldenFiles(t *testing.T) []string {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in testdata: %v", err)
	}
	return files
}

func TestGolden(t *testing.T) {
	for _, path := range goldenFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
				return runGolden(t, td.Cmd, goldenArgs(td))
			})
		})
	}
}

// TestGoldenCoversEveryShape keeps the golden files honest: every spec and
// every mutation case is used by some command.
func TestGoldenCoversEveryShape(t *testing.T) {
	used := map[string]bool{}
	for _, path := range goldenFiles(t) {
		// Each case answers its own expected output: only the commands
		// are read here, TestGolden checks the outputs.
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			args := goldenArgs(td)
			for _, k := range []string{"spec", "case", "if", "provider"} {
				used[k+"="+args[k]] = true
			}
			return td.Expected
		})
	}
	var missing []string
	for name := range goldenSpecs {
		if name != "wide" && !used["spec="+name] {
			missing = append(missing, "spec "+name)
		}
	}
	for name := range goldenMutations() {
		if !used["case="+name] {
			missing = append(missing, "mutation "+name)
		}
	}
	for name := range goldenConditions {
		if !used["if="+name] {
			missing = append(missing, "condition "+name)
		}
	}
	for _, p := range []string{"cassandra", "scylladb", "keyspaces"} {
		if !used["provider="+p] {
			missing = append(missing, "provider "+p)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("golden files do not cover: %v", missing)
	}
}

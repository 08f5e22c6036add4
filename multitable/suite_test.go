package multitable

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

// suite is every behaviour test, run on each backend (pebble_test.go,
// dynamo_test.go).
var suite = []struct {
	name string
	fn   func(t *testing.T, b backend)
}{
	{"CreateTable", testCreateTable},
	{"DeleteTable", testDeleteTable},
	{"DeleteTableInterrupted", testDeleteTableInterrupted},
	{"OtherProcessDeletes", testOtherProcessDeletes},
	{"PutGetDelete", testPutGetDelete},
	{"TTL", testTTL},
	{"DefaultTTLChange", testDefaultTTLChange},
	{"Rewrite", testRewrite},
	{"Refusals", testRefusals},
	{"MissingTable", testMissingTable},
	{"ListOrderAndPaging", testListOrderAndPaging},
	{"ListAfter", testListAfter},
	{"MoveTimestamp", testMoveTimestamp},
	{"Isolation", testIsolation},
	{"SparseListingCost", testSparseListingCost},
	{"ListMaxBytes", testListMaxBytes},
	{"OtherTenantsCost", testOtherTenantsCost},
	{"RetireEmptyBuckets", testRetireEmptyBuckets},
	{"RaceMoveVsSameTimestamp", testRaceMoveVsSameTimestamp},
	{"RaceShortenedEntry", testRaceShortenedEntry},
	{"RaceDeleteVsPut", testRaceDeleteVsPut},
	{"RaceRetireVsPut", testRaceRetireVsPut},
	{"ConcurrentWriters", testConcurrentWriters},
	{"PutCost", testPutCost},
	{"RaceListingFencesNewPut", testRaceListingFencesNewPut},
	{"RaceListingFencesMove", testRaceListingFencesMove},
	{"ListingSparesPutsInFlight", testListingSparesPutsInFlight},
	{"RefusedAfterApplying", testRefusedAfterApplying},
	{"LostRaceLeavesNoEntry", testLostRaceLeavesNoEntry},
	{"PageTokenAfter", testPageTokenAfter},
	{"ItemsWithoutVersions", testItemsWithoutVersions},
	{"Usage", testUsage},
}

func runSuite(t *testing.T, b backend) {
	for _, c := range suite {
		t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
	}
}

func testCreateTable(t *testing.T, b backend) {
	e := newEnv(t, b)
	tb, created, err := e.reg.CreateTable(e.ctx, "orders", Config{DefaultTTL: 90 * time.Second})
	if err != nil || !created || tb.DefaultTTL != 90*time.Second || tb.Name != "orders" {
		t.Fatalf("create: %+v created=%v err=%v", tb, created, err)
	}
	if _, created, err := e.reg.CreateTable(e.ctx, "orders", Config{DefaultTTL: 90 * time.Second}); err != nil || created {
		t.Fatalf("identical create: created=%v err=%v, want false, nil", created, err)
	}
	if tb, created, err := e.reg.CreateTable(e.ctx, "orders", Config{DefaultTTL: time.Hour}); err != nil || created || tb.DefaultTTL != time.Hour {
		t.Fatalf("create with another default TTL: %+v created=%v %v, want it changed", tb, created, err)
	}
	if tb, err := e.reg.Table(e.ctx, "orders"); err != nil || tb.DefaultTTL != time.Hour {
		t.Fatalf("table after the change: %+v %v", tb, err)
	}
	for _, bad := range []string{"", "a/b", "a b", "a#b", "a\x00b", "é", strings.Repeat("x", 129)} {
		if _, _, err := e.reg.CreateTable(e.ctx, bad, Config{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("create %q: %v, want ErrInvalid", bad, err)
		}
	}
	for _, ttl := range []time.Duration{-time.Second, 1500 * time.Microsecond} {
		if _, _, err := e.reg.CreateTable(e.ctx, "t", Config{DefaultTTL: ttl}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("create with default TTL %s: %v, want ErrInvalid", ttl, err)
		}
	}
	long := strings.Repeat("x", 128)
	e.create(long, 0)
	e.create("A.b-c_9", 0)
	tables, err := e.reg.Tables(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	if want := []string{"A.b-c_9", "orders", long}; !slices.Equal(names, want) {
		t.Fatalf("Tables = %q, want %q", names, want)
	}
}

func testDeleteTable(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.create("u", 0)
	for i := range 5 {
		e.put("t", string(rune('a'+i)), at(time.Duration(i)*time.Hour), attrsOf(i), nil)
	}
	e.put("u", "a", at(0), `{}`, nil)
	if err := e.reg.DeleteTable(e.ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.DeleteTable(e.ctx, "t"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if err := e.reg.DeleteTable(e.ctx, "never"); err != nil {
		t.Fatalf("delete of a missing table: %v", err)
	}
	if _, err := e.reg.Get(e.ctx, "t", "a"); !errors.Is(err, ErrNoTable) {
		t.Fatalf("get after delete: %v, want ErrNoTable", err)
	}
	if _, err := e.reg.Table(e.ctx, "t"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("table after delete: %v, want not found", err)
	}
	// Re-created, it starts empty; the other table is untouched.
	e.create("t", time.Hour)
	if got := e.listAll("t", nil, 10); len(got) != 0 {
		t.Fatalf("re-created table lists %q", keys(got))
	}
	if _, ok := e.get("t", "a"); ok {
		t.Fatal("re-created table still has an old item")
	}
	if got := keys(e.listAll("u", nil, 10)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("other table lists %q", got)
	}
	// Only the other table's rows and the re-created table's nothing are
	// left: item + entry + bucket row of u.
	if n := e.rawRows(); n != 3 {
		t.Fatalf("%d rows left in %s after the purge, want 3", n, ItemsTable)
	}
}

// testDeleteTableInterrupted fails a delete part way through its purge:
// the table is gone for reads and writes, cannot be re-created until a
// repeated delete completes, and then starts empty.
func testDeleteTableInterrupted(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	for i := range 4 {
		e.put("t", fmt.Sprint(i), at(time.Duration(i)*time.Hour), attrsOf(i), nil)
	}
	boom := errors.New("injected failure")
	writes := 0
	e.cnt.setHook(func([]store.Mutation) error {
		if writes++; writes == 2 {
			return boom
		}
		return nil
	})
	if err := e.reg.DeleteTable(e.ctx, "t"); !errors.Is(err, boom) {
		t.Fatalf("interrupted delete: %v", err)
	}
	e.cnt.setHook(nil)
	if _, err := e.reg.Get(e.ctx, "t", "3"); !errors.Is(err, ErrNoTable) {
		t.Fatalf("get during the delete: %v", err)
	}
	if _, err := e.reg.Put(e.ctx, "t", PutItem{Key: "x", Timestamp: at(0)}); !errors.Is(err, ErrNoTable) {
		t.Fatalf("put during the delete: %v", err)
	}
	if _, _, err := e.reg.CreateTable(e.ctx, "t", Config{}); !errors.Is(err, ErrDeleting) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create during the delete: %v", err)
	}
	if err := e.reg.DeleteTable(e.ctx, "t"); err != nil {
		t.Fatalf("repeated delete: %v", err)
	}
	if n := e.rawRows(); n != 0 {
		t.Fatalf("%d rows left after the completed delete", n)
	}
	e.create("t", 0)
	if got := e.listAll("t", nil, 10); len(got) != 0 {
		t.Fatalf("re-created table lists %q", keys(got))
	}
}

// testOtherProcessDeletes shows what a Registry sees of another process's
// table changes: a create at once, a delete within Options.CacheTTL.
func testOtherProcessDeletes(t *testing.T, b backend) {
	e := newEnv(t, b)
	other, err := New(e.ctx, e.cnt, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.CreateTable(e.ctx, "t", Config{}); err != nil {
		t.Fatal(err)
	}
	e.put("t", "k", at(0), `{}`, nil) // seen at once
	if err := other.DeleteTable(e.ctx, "t"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(DefaultOptions().CacheTTL)
	if _, err := e.reg.Get(e.ctx, "t", "k"); !errors.Is(err, ErrNoTable) {
		t.Fatalf("get a CacheTTL after another process deleted the table: %v", err)
	}
	if _, err := e.reg.Put(e.ctx, "t", PutItem{Key: "k", Timestamp: at(0)}); !errors.Is(err, ErrNoTable) {
		t.Fatalf("put a CacheTTL after another process deleted the table: %v", err)
	}
}

func testPutGetDelete(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	ts := at(1500 * time.Millisecond)
	got := e.put("t", "k1", ts, `{ "name": "x",  "n": [1, 2] }`, nil)
	want := Item{Key: "k1", Timestamp: ts, Attributes: json.RawMessage(`{"name":"x","n":[1,2]}`)}
	if !itemEqual(got, want) {
		t.Fatalf("Put returned %+v, want %+v", got, want)
	}
	if it, ok := e.get("t", "k1"); !ok || !itemEqual(it, want) {
		t.Fatalf("Get = %+v, %v; want %+v", it, ok, want)
	}
	// Sub-millisecond timestamps are stored to the millisecond.
	e.put("t", "k1", ts.Add(700*time.Microsecond), `{"v":2}`, nil)
	it, _ := e.get("t", "k1")
	if !it.Timestamp.Equal(ts) || string(it.Attributes) != `{"v":2}` {
		t.Fatalf("after overwrite: %+v", it)
	}
	e.put("t", "k2", ts, ``, nil)
	if it, _ := e.get("t", "k2"); string(it.Attributes) != `{}` {
		t.Fatalf("absent attributes stored as %s, want {}", it.Attributes)
	}
	if err := e.reg.Delete(e.ctx, "t", "k1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.get("t", "k1"); ok {
		t.Fatal("deleted item still readable")
	}
	if err := e.reg.Delete(e.ctx, "t", "k1"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k2"}) {
		t.Fatalf("listing after delete = %q", got)
	}
}

func itemEqual(a, b Item) bool {
	return a.Key == b.Key && a.Timestamp.Equal(b.Timestamp) && string(a.Attributes) == string(b.Attributes) &&
		a.ExpiresAt.Equal(b.ExpiresAt)
}

func testTTL(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("d", time.Minute) // default TTL
	e.create("n", 0)           // none
	e.put("d", "default", at(0), `{}`, nil)
	e.put("d", "own", at(0), `{}`, ttlp(90*time.Second))
	e.put("d", "none", at(0), `{}`, ttlp(0))
	e.put("n", "none", at(0), `{}`, nil)
	e.put("n", "own", at(0), `{}`, ttlp(30*time.Second))
	check := func(table, key string, wantExp time.Time) {
		t.Helper()
		it, ok := e.get(table, key)
		if !ok || !it.ExpiresAt.Equal(wantExp) {
			t.Fatalf("%s/%s: %+v %v, want expiry %s", table, key, it, ok, wantExp)
		}
	}
	check("d", "default", at(time.Minute))
	check("d", "own", at(90*time.Second))
	check("d", "none", time.Time{})
	check("n", "none", time.Time{})
	check("n", "own", at(30*time.Second))

	// Expiry is exact to the millisecond: live one millisecond before, gone
	// at the instant, from Get and from listings alike.
	e.clock.Set(at(time.Minute - time.Millisecond))
	if _, ok := e.get("d", "default"); !ok {
		t.Fatal("expired early")
	}
	e.clock.Set(at(time.Minute))
	if _, ok := e.get("d", "default"); ok {
		t.Fatal("returned at its expiry")
	}
	if got := keys(e.listAll("d", nil, 10)); !slices.Equal(got, []string{"none", "own"}) {
		t.Fatalf("d lists %q at +1m", got)
	}
	e.clock.Set(at(time.Hour))
	if got := keys(e.listAll("d", nil, 10)); !slices.Equal(got, []string{"none"}) {
		t.Fatalf("d lists %q at +1h", got)
	}
	if got := keys(e.listAll("n", nil, 10)); !slices.Equal(got, []string{"none"}) {
		t.Fatalf("n lists %q at +1h", got)
	}
	// Re-putting an expired key makes it live again, listed once.
	e.put("d", "default", at(0), `{"again":true}`, nil)
	if got := keys(e.listAll("d", nil, 10)); !slices.Equal(got, []string{"default", "none"}) {
		t.Fatalf("d lists %q after re-put", got)
	}
}

func testRefusals(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.put("t", "keep", at(0), `{"v":1}`, nil)
	before := e.rawRows()
	big := `{"x":"` + strings.Repeat("a", MaxAttributesBytes) + `"}`
	exact := `{"x":"` + strings.Repeat("a", MaxAttributesBytes-8) + `"}`
	cases := []struct {
		name   string
		table  string
		in     PutItem
		target error
	}{
		{"too large", "t", PutItem{Key: "k", Timestamp: at(0), Attributes: json.RawMessage(big)}, store.ErrTooLarge},
		{"malformed JSON", "t", PutItem{Key: "k", Timestamp: at(0), Attributes: json.RawMessage(`{"a":`)}, store.ErrInvalid},
		{"not an object", "t", PutItem{Key: "k", Timestamp: at(0), Attributes: json.RawMessage(`[1,2]`)}, store.ErrInvalid},
		{"empty key", "t", PutItem{Key: "", Timestamp: at(0)}, store.ErrInvalid},
		{"invalid UTF-8 key", "t", PutItem{Key: "a\xffb", Timestamp: at(0)}, store.ErrInvalid},
		{"long key", "t", PutItem{Key: strings.Repeat("k", MaxKeyBytes+1), Timestamp: at(0)}, store.ErrInvalid},
		{"long NUL key", "t", PutItem{Key: strings.Repeat("\x00", MaxKeyBytes/2+1), Timestamp: at(0)}, store.ErrInvalid},
		{"no timestamp", "t", PutItem{Key: "k"}, store.ErrInvalid},
		{"negative ttl", "t", PutItem{Key: "k", Timestamp: at(0), TTL: ttlp(-time.Second)}, store.ErrInvalid},
		{"sub-ms ttl", "t", PutItem{Key: "k", Timestamp: at(0), TTL: ttlp(time.Microsecond)}, store.ErrInvalid},
		{"bad table name", "t/x", PutItem{Key: "k", Timestamp: at(0)}, store.ErrInvalid},
		{"missing table", "nope", PutItem{Key: "k", Timestamp: at(0)}, store.ErrNotFound},
	}
	for _, c := range cases {
		if _, err := e.reg.Put(e.ctx, c.table, c.in); !errors.Is(err, c.target) {
			t.Errorf("%s: %v, want %v", c.name, err, c.target)
		}
	}
	if after := e.rawRows(); after != before {
		t.Fatalf("refused puts wrote rows: %d before, %d after", before, after)
	}
	if it, _ := e.get("t", "keep"); string(it.Attributes) != `{"v":1}` {
		t.Fatalf("existing item changed: %s", it.Attributes)
	}
	// The limits themselves are accepted.
	e.put("t", "exact", at(0), exact, nil)
	e.put("t", strings.Repeat("k", MaxKeyBytes), at(0), `{}`, nil)
	e.put("t", strings.Repeat("\x00", MaxKeyBytes/2), at(0), `{}`, nil)
}

func testMissingTable(t *testing.T, b backend) {
	e := newEnv(t, b)
	if _, err := e.reg.Get(e.ctx, "nope", "k"); !errors.Is(err, ErrNoTable) {
		t.Errorf("Get: %v", err)
	}
	if err := e.reg.Delete(e.ctx, "nope", "k"); !errors.Is(err, ErrNoTable) {
		t.Errorf("Delete: %v", err)
	}
	if _, err := e.reg.List(e.ctx, "nope", ListQuery{Limit: 1}); !errors.Is(err, ErrNoTable) {
		t.Errorf("List: %v", err)
	}
	e.create("t", 0)
	if _, err := e.reg.Get(e.ctx, "t", "k"); !errors.Is(err, ErrNoItem) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a missing item: %v", err)
	}
	// A zero limit is the default page, as for the HTTP API.
	if page, err := e.reg.List(e.ctx, "t", ListQuery{}); err != nil || len(page.Items) != 0 {
		t.Errorf("List without a limit: %+v, %v", page, err)
	}
	for _, l := range []int{-1, store.MaxLimit + 1} {
		if _, err := e.reg.List(e.ctx, "t", ListQuery{Limit: l}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("List limit %d: %v", l, err)
		}
	}
	for _, tok := range []string{"x", "AAAA", "!!", encodeToken(position{ts: at(0), key: "k"})[:5]} {
		if _, err := e.reg.List(e.ctx, "t", ListQuery{Limit: 1, PageToken: tok}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("List token %q: %v", tok, err)
		}
	}
}

func testListOrderAndPaging(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	// Equal timestamps order by key bytewise; timestamps span several
	// buckets, before and after 1970.
	puts := []struct {
		ts  time.Time
		key string
	}{
		{time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC), "z"},
		{at(0), "b"}, {at(0), "B"}, {at(0), "a\x00"}, {at(0), "a"},
		{at(time.Millisecond), "0"},
		{at(59 * time.Minute), "m"}, {at(61 * time.Minute), "n"}, {at(50 * time.Hour), "q"},
	}
	for i, p := range puts {
		e.put("t", p.key, p.ts, attrsOf(i), nil)
	}
	want := []string{"z", "B", "a", "a\x00", "b", "0", "m", "n", "q"}
	for _, size := range []int{1, 2, 7, 100} {
		if got := keys(e.listAll("t", nil, size)); !slices.Equal(got, want) {
			t.Fatalf("page size %d: %q, want %q", size, got, want)
		}
	}
}

func testListAfter(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	for i := range 6 {
		e.put("t", string(rune('a'+i)), at(time.Duration(i)*30*time.Minute), attrsOf(i), nil)
	}
	for _, c := range []struct {
		after time.Time
		want  string
	}{
		{at(-time.Hour), "abcdef"},
		{at(0), "bcdef"},                  // strictly after
		{at(-time.Microsecond), "abcdef"}, // within the millisecond before
		{at(time.Microsecond), "bcdef"},   // within the item's millisecond
		{at(60 * time.Minute), "def"},     // a bucket boundary
		{at(149 * time.Minute), "f"},      //
		{at(150 * time.Minute), ""},       // the last item's time
		{at(100 * time.Hour), ""},         // beyond everything
	} {
		for _, size := range []int{1, 3, 100} {
			got := strings.Join(keys(e.listAll("t", &c.after, size)), "")
			if got != c.want {
				t.Errorf("after %s, size %d: %q, want %q", c.after.Sub(t0), size, got, c.want)
			}
		}
	}
}

func testMoveTimestamp(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.put("t", "k", at(0), `{"v":1}`, nil)
	e.put("t", "other", at(time.Hour), `{}`, nil)
	e.put("t", "k", at(2*time.Hour), `{"v":2}`, nil) // another bucket
	e.put("t", "k", at(2*time.Hour+time.Second), `{"v":3}`, nil)
	got := e.listAll("t", nil, 10)
	if ks := keys(got); !slices.Equal(ks, []string{"other", "k"}) {
		t.Fatalf("listing = %q, want [other k]", ks)
	}
	if string(got[1].Attributes) != `{"v":3}` {
		t.Fatalf("listed attributes %s", got[1].Attributes)
	}
	// The old entries are gone, not merely skipped.
	if s := e.reg.metrics; testCounter(t, s.stale) != 0 {
		t.Fatalf("listing met %v stale entries", testCounter(t, s.stale))
	}
}

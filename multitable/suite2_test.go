package multitable

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ebb-data/ebb/store"
)

func testCounter(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// adversarialTables are names that a separator-joined layout would mix
// up: prefixes of each other, the separator characters themselves, and
// the longest names.
var adversarialTables = []string{
	"a", "a_b", "a.b", "a-b", "ab", "A", "b", "_", "a_", "a__b",
	strings.Repeat("t", 127), strings.Repeat("t", 128),
}

// adversarialKeys are keys that would collide across those tables under
// concatenation, or probe the key encoding: separators, NUL and its
// escape, prefixes, and the longest keys.
var adversarialKeys = []string{
	"x", "b_x", "_x", "b", "_", "#", "a#b", "/", "a/b", "%2F", "\x00", "x\x00", "x\x00y",
	"\x00\x01", "\x00\u00ff", "k", "kk", "kkk", "a_b", "a", "t",
	strings.Repeat("k", MaxKeyBytes), strings.Repeat("k", MaxKeyBytes-1),
	strings.Repeat("\x00", MaxKeyBytes/2),
}

// testIsolation writes every adversarial key into every adversarial table,
// each item's attributes naming its (table, key), and shows that every
// table reads and lists exactly its own items.
func testIsolation(t *testing.T, b backend) {
	e := newEnv(t, b)
	tables, ks := adversarialTables, adversarialKeys
	if testing.Short() {
		tables, ks = tables[:6], ks[:12]
	}
	doc := func(table, key string) string {
		d, _ := json.Marshal(map[string]string{"t": table, "k": key})
		return string(d)
	}
	for ti, table := range tables {
		e.create(table, 0)
		for ki, key := range ks {
			// Timestamps differ per table so a leak would also show in
			// another table's time order.
			e.put(table, key, at(time.Duration(ti*len(ks)+ki)*time.Minute), doc(table, key), nil)
		}
	}
	check := func(present map[string]map[string]bool) {
		t.Helper()
		for _, table := range tables {
			var want []string
			for _, key := range ks {
				it, ok := e.get(table, key)
				if ok != present[table][key] {
					t.Fatalf("%q/%q present=%v, want %v", clip(table), clip(key), ok, present[table][key])
				}
				if ok && string(it.Attributes) != doc(table, key) {
					t.Fatalf("%q/%q reads another tenant's item: %s", clip(table), clip(key), clip(string(it.Attributes)))
				}
				if ok {
					want = append(want, key)
				}
			}
			items := e.listAll(table, nil, 7)
			var got []string
			for _, it := range items {
				if string(it.Attributes) != doc(table, it.Key) {
					t.Fatalf("%q lists another tenant's item: %s", clip(table), clip(string(it.Attributes)))
				}
				got = append(got, it.Key)
			}
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%q lists %d items, want %d", clip(table), len(got), len(want))
			}
		}
	}
	present := map[string]map[string]bool{}
	for _, table := range tables {
		present[table] = map[string]bool{}
		for _, key := range ks {
			present[table][key] = true
		}
	}
	check(present)
	// Deleting ("a", "b_x") leaves ("a_b", "x") and everything else.
	if err := e.reg.Delete(e.ctx, "a", "b_x"); err != nil {
		t.Fatal(err)
	}
	present["a"]["b_x"] = false
	if err := e.reg.Delete(e.ctx, "a_b", "\x00"); err != nil {
		t.Fatal(err)
	}
	present["a_b"]["\x00"] = false
	check(present)
	// Deleting table "a" leaves "a_b", "a.b", "ab" and the rest intact.
	if err := e.reg.DeleteTable(e.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	tables = slices.DeleteFunc(slices.Clone(tables), func(s string) bool { return s == "a" })
	check(present)
}

// testSparseListingCost lists items decades apart: with one-hour buckets
// a bucket-by-bucket walk would visit hundreds of thousands of buckets;
// the directory makes the cost a handful of reads per item.
func testSparseListingCost(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("s", 0)
	years := []int{1990, 2000, 2010, 2020, 2030, 2040}
	for i, y := range years {
		e.put("s", fmt.Sprint(y), time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC), attrsOf(i), nil)
	}
	before := e.cnt.reads()
	page, err := e.reg.List(e.ctx, "s", ListQuery{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	cost := e.cnt.reads() - before
	if got := keys(page.Items); !slices.Equal(got, []string{"1990", "2000", "2010"}) || page.NextPageToken == "" {
		t.Fatalf("page = %q token %q", got, page.NextPageToken)
	}
	// 1 table record + 1 directory page + per item (page + lookahead) one
	// bucket query and one item read.
	if max := int64(2 + 4*2); cost > max {
		t.Fatalf("listing 3 of 6 sparse items took %d reads, want at most %d", cost, max)
	}
	after := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	before = e.cnt.reads()
	if got := keys(e.listAll("s", &after, 10)); !slices.Equal(got, []string{"2020", "2030", "2040"}) {
		t.Fatalf("after 2015: %q", got)
	}
	if cost := e.cnt.reads() - before; cost > 2+3*2 {
		t.Fatalf("listing 3 sparse items after 2015 took %d reads", cost)
	}
}

// testListMaxBytes: a page bounded by MaxBytes ends at the first item
// that takes its keys and attributes to the bound, with a token, and
// following the tokens returns every item exactly once, in order.
func testListMaxBytes(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("big", 0)
	const n, size = 7, 100 << 10
	var want []string
	for i := range n {
		key := fmt.Sprint("k", i)
		e.put("big", key, at(time.Duration(i)*time.Minute), `{"v":"`+strings.Repeat("x", size)+`"}`, nil)
		want = append(want, key)
	}
	var got []string
	lq := ListQuery{Limit: 1000, MaxBytes: 2*size + 100}
	for pages := 1; ; pages++ {
		page, err := e.reg.List(e.ctx, "big", lq)
		if err != nil {
			t.Fatal(err)
		}
		if page.NextPageToken != "" && len(page.Items) != 3 {
			t.Fatalf("page %d holds %d items of %d bytes under a bound of %d, want 3", pages, len(page.Items), size, lq.MaxBytes)
		}
		got = append(got, keys(page.Items)...)
		if page.NextPageToken == "" {
			break
		}
		if pages > n {
			t.Fatalf("more than %d pages", n)
		}
		lq.PageToken = page.NextPageToken
	}
	if !slices.Equal(got, want) {
		t.Fatalf("bounded pages = %q, want %q", got, want)
	}
	page, err := e.reg.List(e.ctx, "big", ListQuery{Limit: 1000})
	if err != nil || len(page.Items) != n || page.NextPageToken != "" {
		t.Fatalf("unbounded page: %d items, token %q, err %v", len(page.Items), page.NextPageToken, err)
	}
}

// testOtherTenantsCost shows that listing a small table costs the same
// whatever other tables hold.
func testOtherTenantsCost(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("small", 0)
	e.create("big", 0)
	for i := range 3 {
		e.put("small", fmt.Sprint(i), at(time.Duration(i)*time.Hour), attrsOf(i), nil)
	}
	cost := func() int64 {
		before := e.cnt.reads()
		if n := len(e.listAll("small", nil, 100)); n != 3 {
			t.Fatalf("small lists %d items", n)
		}
		return e.cnt.reads() - before
	}
	alone := cost()
	n := 400
	if testing.Short() {
		n = 100
	}
	for i := range n {
		// Same timestamps and bucket range as the small table's items, and
		// the small table's keys too.
		e.put("big", fmt.Sprint(i), at(time.Duration(i%3)*time.Hour), attrsOf(i), nil)
	}
	if shared := cost(); shared != alone {
		t.Fatalf("listing the small table took %d reads alone, %d beside %d items of another table", alone, shared, n)
	}
}

// testRetireEmptyBuckets moves an item without expiry through 40 buckets,
// leaving 39 empty ones in the directory. The first listing walks them and
// retires them; the next one reads only what it returns.
func testRetireEmptyBuckets(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	for h := range 40 {
		e.put("t", "k", at(time.Duration(h)*time.Hour), `{}`, nil)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing = %q", got)
	}
	if n := testCounter(t, e.reg.metrics.retired); n != 39 {
		t.Fatalf("%v buckets retired, want 39", n)
	}
	before := e.cnt.reads()
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("second listing = %q", got)
	}
	if cost := e.cnt.reads() - before; cost > 4 {
		t.Fatalf("second listing took %d reads, want at most 4", cost)
	}
}

// isItemWrite reports whether batch writes the item row of key.
func isItemWrite(batch []store.Mutation, key string) bool {
	for _, m := range batch {
		if m.Kind == store.Upsert && len(m.Partition) == 4 && m.Partition[2] == kindItem && m.Clustering[1] == key {
			return true
		}
	}
	return false
}

func isEntryWrite(batch []store.Mutation, kind store.MutationKind, key string) bool {
	for _, m := range batch {
		if m.Kind == kind && len(m.Partition) == 4 && m.Partition[2] == kindEntry && m.Clustering[1] == key {
			return true
		}
	}
	return false
}

// once runs f the first time cond holds for a batch written through the
// counting store, then never again.
func (e *env) once(cond func([]store.Mutation) bool, f func()) {
	var mu sync.Mutex
	done := false
	e.cnt.setHook(func(batch []store.Mutation) error {
		mu.Lock()
		if done || !cond(batch) {
			mu.Unlock()
			return nil
		}
		done = true
		mu.Unlock()
		f()
		return nil
	})
}

// testRaceMoveVsSameTimestamp stages the race that would lose an item
// from listings without verification: P1 re-puts k at its current time
// T0 while P2 moves k to T1. P2 runs entirely between P1's entry write and
// P1's item write, so P2 removes the entry P1 relies on and P1's item
// (T0) lands last.
func testRaceMoveVsSameTimestamp(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.put("t", "k", at(0), `{"v":0}`, nil)
	e.once(func(batch []store.Mutation) bool { return isItemWrite(batch, "k") }, func() {
		e.put("t", "k", at(time.Minute), `{"v":"p2"}`, nil)
	})
	e.put("t", "k", at(0), `{"v":"p1"}`, nil)
	it, _ := e.get("t", "k")
	if !it.Timestamp.Equal(at(0)) || string(it.Attributes) != `{"v":"p1"}` {
		t.Fatalf("final item %+v", it)
	}
	got := e.listAll("t", nil, 10)
	if len(got) != 1 || !got[0].Timestamp.Equal(at(0)) {
		t.Fatalf("listing after the race = %+v, want k at T0 once", got)
	}
	if n := testCounter(t, e.reg.metrics.conflicts); n < 1 {
		t.Fatalf("no write conflict counted")
	}
}

// testRaceShortenedEntry stages two puts of k at one timestamp with
// different TTLs: P2 (1 minute) runs entirely between P1's (1 hour) entry
// write and its item write, so P1's item lands last but P2's entry, with
// the shorter expiry, overwrote P1's. The entry must be lengthened again,
// or the item would vanish from listings after a minute while still live.
func testRaceShortenedEntry(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.once(func(batch []store.Mutation) bool { return isItemWrite(batch, "k") }, func() {
		e.put("t", "k", at(0), `{"v":"p2"}`, ttlp(time.Minute))
	})
	e.put("t", "k", at(0), `{"v":"p1"}`, ttlp(time.Hour))
	e.clock.Advance(2 * time.Minute)
	it, ok := e.get("t", "k")
	if !ok || string(it.Attributes) != `{"v":"p1"}` {
		t.Fatalf("final item %+v %v", it, ok)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing after the shorter entry would have expired = %q, want [k]", got)
	}
}

// testRaceDeleteVsPut stages a delete of k that removes k's entry just
// after a concurrent put of k (same timestamp) completed: the delete's
// re-check restores the entry.
func testRaceDeleteVsPut(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.put("t", "k", at(0), `{"v":0}`, nil)
	e.once(func(batch []store.Mutation) bool { return isEntryWrite(batch, store.DeleteRow, "k") }, func() {
		e.put("t", "k", at(0), `{"v":1}`, nil)
	})
	if err := e.reg.Delete(e.ctx, "t", "k"); err != nil {
		t.Fatal(err)
	}
	it, ok := e.get("t", "k")
	if !ok || string(it.Attributes) != `{"v":1}` {
		t.Fatalf("the put that followed the delete's item removal is lost: %+v %v", it, ok)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing = %q, want [k]", got)
	}
}

// testRaceRetireVsPut stages a listing (one process) that retires an empty
// bucket while a put (another process, which remembers the bucket row)
// is about to write an entry into it.
func testRaceRetireVsPut(t *testing.T, b backend) {
	e := newEnv(t, b)
	other, err := New(e.ctx, e.cnt, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.create("t", 0)
	put := func(r *Registry, key string, ts time.Time) {
		if _, err := r.Put(e.ctx, "t", PutItem{Key: key, Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	put(other, "k0", at(0))
	put(other, "k0", at(5*time.Hour)) // bucket 0 is now empty but announced
	e.once(func(batch []store.Mutation) bool { return isEntryWrite(batch, store.Upsert, "k1") }, func() {
		if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k0"}) {
			t.Errorf("listing during the put = %q", got)
		}
	})
	put(other, "k1", at(time.Minute)) // into bucket 0
	if n := testCounter(t, e.reg.metrics.retired); n != 1 {
		t.Fatalf("%v buckets retired, want 1", n)
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k1", "k0"}) {
		t.Fatalf("listing after the race = %q, want [k1 k0]", got)
	}
}

// testConcurrentWriters runs writers that put, move and delete a small set
// of keys at once, then checks that the listing is exactly the set of live
// items, each once, at its current timestamp.
func testConcurrentWriters(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	const writers, ops, nkeys = 4, 40, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range ops {
				key := fmt.Sprint("k", r.IntN(nkeys))
				op := func() error { return e.reg.Delete(e.ctx, "t", key) }
				if r.IntN(5) != 0 {
					// TTLs vary so that entries are also shortened and
					// lengthened concurrently.
					ttl := []*time.Duration{nil, ttlp(time.Hour), ttlp(2 * time.Hour)}[r.IntN(3)]
					in := PutItem{Key: key, Timestamp: at(time.Duration(r.IntN(4)) * 40 * time.Minute), TTL: ttl}
					op = func() error { _, err := e.reg.Put(e.ctx, "t", in); return err }
				}
				// An operation that lost the race to the key maxAttempts
				// times answers ErrUnavailable, "retry": as a client does,
				// the writer retries it (on a slow backend under the race
				// detector it happens now and then).
				err := op()
				for try := 0; try < 3 && errors.Is(err, store.ErrUnavailable); try++ {
					err = op()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	// Listers run beside the writers: they see entries of writes in
	// flight, skip them and clean them up, which the writers' own checks
	// must survive.
	stop := make(chan struct{})
	var lw sync.WaitGroup
	for range 2 {
		lw.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				page, err := e.reg.List(e.ctx, "t", ListQuery{Limit: 100})
				if err != nil {
					errs <- err
					return
				}
				for i := 1; i < len(page.Items); i++ {
					if !less(page.Items[i-1], page.Items[i]) {
						errs <- fmt.Errorf("listing out of order or repeated: %q", keys(page.Items))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	lw.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		var want []Item
		for k := range nkeys {
			if it, ok := e.get("t", fmt.Sprint("k", k)); ok {
				want = append(want, it)
			}
		}
		sort.Slice(want, func(i, j int) bool { return less(want[i], want[j]) })
		got := e.listAll("t", nil, 3)
		t.Logf("%d live items; %v write conflicts, %v stale entries removed, %v bucket rows repaired, %v stale entries met", len(want),
			testCounter(t, e.reg.metrics.conflicts), testCounter(t, e.reg.metrics.repairs.WithLabelValues("stale_entry")),
			testCounter(t, e.reg.metrics.repairs.WithLabelValues("bucket")), testCounter(t, e.reg.metrics.stale))
		if len(got) != len(want) {
			t.Fatalf("listing has %d items, %d are live", len(got), len(want))
		}
		for i := range got {
			if !itemEqual(got[i], want[i]) {
				t.Fatalf("item %d listed as %+v, stored as %+v", i, got[i], want[i])
			}
		}
	}
	check()
	// Once the one-hour items expire, every item still live must still be
	// listed: no entry may expire before its item.
	e.clock.Advance(90 * time.Minute)
	check()
}

func testUsage(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("u1", 0)
	e.create("u2", time.Hour)
	e.create("gone", 0)
	if err := e.reg.DeleteTable(e.ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	e.put("u1", "ab", at(0), `{"x":1}`, nil)
	e.put("u1", "c", at(2*time.Hour), `{}`, nil)
	e.put("u2", "k", at(0), `{}`, ttlp(time.Minute))
	e.clock.Advance(time.Minute) // u2's item has expired
	u, err := Usage(e.ctx, e.raw)
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string][2]int64)
	for _, x := range u {
		got[x.Name] = [2]int64{x.Items, x.Bytes}
	}
	want := map[string][2]int64{"u1": {2, (2 + 7 + 8) + (1 + 2 + 8)}, "u2": {0, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Usage = %v, want %v", got, want)
	}
}

package multitable

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

// conditionalSuite is the behaviour of conditional and partial writes and
// batch reads, run on each backend with the rest of the suite.
var conditionalSuite = []struct {
	name string
	fn   func(t *testing.T, b backend)
}{
	{"CreateOnly", testCreateOnly},
	{"CompareAndSet", testCompareAndSet},
	{"DeleteIfVersion", testDeleteIfVersion},
	{"RaceCompareAndSet", testRaceCompareAndSet},
	{"RaceCreateOnly", testRaceCreateOnly},
	{"Patch", testPatch},
	{"RacePatch", testRacePatch},
	{"GetMany", testGetMany},
}

func init() { suite = append(suite, conditionalSuite...) }

func (e *env) mustGet(table, key string) Item {
	e.t.Helper()
	it, ok := e.get(table, key)
	if !ok {
		e.t.Fatalf("%s/%s: missing", table, key)
	}
	return it
}

func testCreateOnly(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	first, err := e.reg.Put(e.ctx, "t", PutItem{Key: "k", Timestamp: at(0), Attributes: json.RawMessage(`{"a":1}`), IfAbsent: true})
	if err != nil {
		t.Fatalf("create-only put of a new key: %v", err)
	}
	if first.Version == "" {
		t.Fatal("put returned no version")
	}
	_, err = e.reg.Put(e.ctx, "t", PutItem{Key: "k", Timestamp: at(time.Minute), Attributes: json.RawMessage(`{"a":2}`), IfAbsent: true})
	if !errors.Is(err, ErrPrecondition) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create-only put of an existing key = %v, want ErrPrecondition", err)
	}
	if got := e.mustGet("t", "k"); !itemEqual(got, first) || got.Version != first.Version {
		t.Fatalf("refused put changed the item: %+v, want %+v", got, first)
	}
	if n := len(e.listAll("t", nil, 10)); n != 1 {
		t.Fatalf("listing holds %d items after a refused put, want 1", n)
	}
	// An expired item is absent: create-only succeeds over it.
	if _, err := e.reg.Put(e.ctx, "t", PutItem{Key: "x", Timestamp: at(0), TTL: ttlp(time.Second)}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	if _, err := e.reg.Put(e.ctx, "t", PutItem{Key: "x", Timestamp: at(0), IfAbsent: true}); err != nil {
		t.Fatalf("create-only put over an expired item: %v", err)
	}
	if _, err := e.reg.Put(e.ctx, "t", PutItem{Key: "y", Timestamp: at(0), IfAbsent: true, IfVersion: "*"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("create-only and versioned at once = %v, want ErrInvalid", err)
	}
}

func testCompareAndSet(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	v1 := e.put("t", "k", at(0), `{"a":1}`, nil)
	if got := e.mustGet("t", "k"); got.Version != v1.Version {
		t.Fatalf("get version %q, put returned %q", got.Version, v1.Version)
	}
	v2, err := e.reg.Put(e.ctx, "t", PutItem{Key: "k", Timestamp: at(time.Minute), Attributes: json.RawMessage(`{"a":2}`), IfVersion: v1.Version})
	if err != nil {
		t.Fatalf("put at the current version: %v", err)
	}
	if v2.Version == v1.Version {
		t.Fatal("a write kept the version")
	}
	_, err = e.reg.Put(e.ctx, "t", PutItem{Key: "k", Timestamp: at(2 * time.Minute), Attributes: json.RawMessage(`{"a":3}`), IfVersion: v1.Version})
	if !errors.Is(err, ErrPrecondition) {
		t.Fatalf("put at a stale version = %v, want ErrPrecondition", err)
	}
	if got := e.mustGet("t", "k"); !itemEqual(got, v2) || got.Version != v2.Version {
		t.Fatalf("refused put changed the item: %+v, want %+v", got, v2)
	}
	if _, err := e.reg.Put(e.ctx, "t", PutItem{Key: "k", Timestamp: at(0), IfVersion: "*"}); err != nil {
		t.Fatalf("put if any version exists: %v", err)
	}
	for _, v := range []string{"*", v1.Version} {
		if _, err := e.reg.Put(e.ctx, "t", PutItem{Key: "none", Timestamp: at(0), IfVersion: v}); !errors.Is(err, ErrPrecondition) {
			t.Fatalf("put if version %q of a missing key = %v, want ErrPrecondition", v, err)
		}
	}
	if _, ok := e.get("t", "none"); ok {
		t.Fatal("a refused put created the item")
	}
	if got := keys(e.listAll("t", nil, 10)); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("listing = %q, want [k]", got)
	}
}

func testDeleteIfVersion(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	v1 := e.put("t", "k", at(0), `{}`, nil)
	v2 := e.put("t", "k", at(0), `{"b":1}`, nil)
	if err := e.reg.DeleteIf(e.ctx, "t", "k", v1.Version); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("delete at a stale version = %v, want ErrPrecondition", err)
	}
	if _, ok := e.get("t", "k"); !ok {
		t.Fatal("a refused delete deleted")
	}
	if err := e.reg.DeleteIf(e.ctx, "t", "k", v2.Version); err != nil {
		t.Fatalf("delete at the current version: %v", err)
	}
	if _, ok := e.get("t", "k"); ok {
		t.Fatal("item still there")
	}
	if err := e.reg.DeleteIf(e.ctx, "t", "k", "*"); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("delete if any version of a missing item = %v, want ErrPrecondition", err)
	}
}

// racePuts runs four conditional puts (put(w) for writer w) at once and
// returns what each put returned and the one writer that won, failing the
// test unless exactly one won and the others failed their precondition.
func racePuts(t *testing.T, e *env, put func(w int) PutItem) ([]Item, int) {
	t.Helper()
	const writers = 4
	res := make([]Item, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			<-start
			res[w], errs[w] = e.reg.Put(e.ctx, "t", put(w))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both won", winner, w)
			}
			winner = w
		case !errors.Is(err, ErrPrecondition):
			t.Fatalf("writer %d: %v, want success or ErrPrecondition", w, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	return res, winner
}

// testRaceCompareAndSet: writers that read the same version and write at
// it at once: exactly one wins, the others fail their precondition, and
// the item is the winner's.
func testRaceCompareAndSet(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	for round := range 5 {
		base := e.put("t", "k", at(0), `{"w":-1}`, nil)
		res, winner := racePuts(t, e, func(w int) PutItem {
			return PutItem{Key: "k", Timestamp: at(time.Duration(w) * time.Minute),
				Attributes: json.RawMessage(fmt.Sprintf(`{"w":%d}`, w)), IfVersion: base.Version}
		})
		got := e.mustGet("t", "k")
		if !itemEqual(got, res[winner]) || got.Version != res[winner].Version {
			t.Fatalf("round %d: item %+v, want the winner's %+v", round, got, res[winner])
		}
		if l := e.listAll("t", nil, 10); len(l) != 1 || !itemEqual(l[0], got) {
			t.Fatalf("round %d: listing %+v, want the winner's item alone", round, l)
		}
	}
}

// testRaceCreateOnly: create-only writers of one new key: exactly one
// creates it.
func testRaceCreateOnly(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	for round := range 5 {
		key := fmt.Sprint("k", round)
		res, winner := racePuts(t, e, func(w int) PutItem {
			return PutItem{Key: key, Timestamp: at(0), Attributes: json.RawMessage(fmt.Sprintf(`{"w":%d}`, w)), IfAbsent: true}
		})
		if got := e.mustGet("t", key); got.Version != res[winner].Version || string(got.Attributes) != string(res[winner].Attributes) {
			t.Fatalf("round %d: item %+v, want the winner's %+v", round, got, res[winner])
		}
	}
}

func testPatch(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	orig, err := e.reg.Put(e.ctx, "t", PutItem{Key: "k", Timestamp: at(0), TTL: ttlp(time.Hour),
		Attributes: json.RawMessage(`{"name":"a","n":12345678901234567890,"tags":{"x":1,"y":2},"gone":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.reg.Patch(e.ctx, "t", PatchItem{Key: "k", Attributes: json.RawMessage(`{"name":"b","tags":{"y":null,"z":"<&>"},"gone":null,"new":[1]}`)})
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	want := `{"n":12345678901234567890,"name":"b","new":[1],"tags":{"x":1,"z":"<&>"}}`
	if string(got.Attributes) != want {
		t.Fatalf("patched attributes %s, want %s", got.Attributes, want)
	}
	if !got.Timestamp.Equal(orig.Timestamp) || !got.ExpiresAt.Equal(orig.ExpiresAt) {
		t.Fatalf("patch without timestamp or ttl moved them: %+v, was %+v", got, orig)
	}
	if read := e.mustGet("t", "k"); !itemEqual(read, got) || read.Version != got.Version || got.Version == orig.Version {
		t.Fatalf("read %+v after patch returned %+v (was version %s)", read, got, orig.Version)
	}
	// A patch that moves the timestamp and clears the expiry, at the
	// current version.
	later := at(time.Hour)
	moved, err := e.reg.Patch(e.ctx, "t", PatchItem{Key: "k", Timestamp: &later, TTL: ttlp(0), IfVersion: got.Version})
	if err != nil {
		t.Fatalf("Patch moving: %v", err)
	}
	if !moved.Timestamp.Equal(at(time.Hour)) || !moved.ExpiresAt.IsZero() || string(moved.Attributes) != want {
		t.Fatalf("moved = %+v", moved)
	}
	if l := e.listAll("t", nil, 10); len(l) != 1 || !itemEqual(l[0], moved) {
		t.Fatalf("listing after a moving patch = %+v", l)
	}
	if _, err := e.reg.Patch(e.ctx, "t", PatchItem{Key: "k", Attributes: json.RawMessage(`{"a":1}`), IfVersion: got.Version}); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("patch at a stale version = %v, want ErrPrecondition", err)
	}
	if _, err := e.reg.Patch(e.ctx, "t", PatchItem{Key: "none", Attributes: json.RawMessage(`{"a":1}`)}); !errors.Is(err, ErrNoItem) {
		t.Fatalf("patch of a missing item = %v, want ErrNoItem", err)
	}
	if _, ok := e.get("t", "none"); ok {
		t.Fatal("a patch created an item")
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":`} {
		if _, err := e.reg.Patch(e.ctx, "t", PatchItem{Key: "k", Attributes: json.RawMessage(bad)}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("patch %s = %v, want ErrInvalid", bad, err)
		}
	}
	if read := e.mustGet("t", "k"); read.Version != moved.Version {
		t.Fatal("a refused patch wrote")
	}
}

// testRacePatch: patches of different attributes of one item at once all
// land: none is lost to another's read-modify-write.
func testRacePatch(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.put("t", "k", at(0), `{"keep":true}`, nil)
	const writers = 4
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			in := PatchItem{Key: "k", Attributes: json.RawMessage(fmt.Sprintf(`{"w%d":%d}`, w, w))}
			_, err := e.reg.Patch(e.ctx, "t", in)
			// Sustained contention answers ErrUnavailable, "retry", as a
			// client would.
			for try := 0; try < 5 && errors.Is(err, store.ErrUnavailable); try++ {
				_, err = e.reg.Patch(e.ctx, "t", in)
			}
			errs[w] = err
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("patch %d: %v", w, err)
		}
	}
	want := `{"keep":true,"w0":0,"w1":1,"w2":2,"w3":3}`
	if got := e.mustGet("t", "k"); string(got.Attributes) != want {
		t.Fatalf("attributes %s, want %s", got.Attributes, want)
	}
}

func testGetMany(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("t", 0)
	e.create("other", 0)
	a := e.put("t", "a", at(0), `{"a":1}`, nil)
	c := e.put("t", "c", at(time.Minute), `{"c":1}`, nil)
	e.put("t", "gone", at(0), `{}`, ttlp(time.Second))
	e.put("other", "b", at(0), `{}`, nil)
	e.clock.Advance(2 * time.Second)
	items, missing, err := e.reg.GetMany(e.ctx, "t", []string{"c", "b", "a", "gone", "c"})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(items) != 2 || !itemEqual(items[0], c) || !itemEqual(items[1], a) || items[0].Version != c.Version {
		t.Fatalf("items %+v, want c then a", items)
	}
	if !slices.Equal(missing, []string{"b", "gone"}) {
		t.Fatalf("missing %q, want [b gone]", missing)
	}
	many := make([]string, MaxBatchGet)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	if _, missing, err := e.reg.GetMany(e.ctx, "t", many); err != nil || len(missing) != MaxBatchGet {
		t.Fatalf("GetMany of %d keys: %d missing, %v", MaxBatchGet, len(missing), err)
	}
	if _, _, err := e.reg.GetMany(e.ctx, "t", append(many, "one-more")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("GetMany of %d keys = %v, want ErrInvalid", MaxBatchGet+1, err)
	}
	if _, _, err := e.reg.GetMany(e.ctx, "t", []string{"a", ""}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("GetMany with an empty key = %v, want ErrInvalid", err)
	}
	if _, _, err := e.reg.GetMany(e.ctx, "nope", []string{"a"}); !errors.Is(err, ErrNoTable) {
		t.Fatalf("GetMany of a missing table = %v, want ErrNoTable", err)
	}
}

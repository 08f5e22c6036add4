package multitable

import (
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/rewrite"
)

// testRewrite changes a table's default TTL with a rewrite: items whose
// expiry came from the default get the time of their last write + the new
// default (deleted when that has passed), items with a ttl of their own
// and items written before items recorded where their expiry came from
// keep theirs. The job is stopped after its first batch and resumed by
// another registry on the same store, as after a restart.
func testRewrite(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("r", time.Hour)
	e.put("r", "def", at(0), `{}`, nil)
	e.put("r", "own", at(0), `{}`, ttlp(2*time.Hour))
	rec, err := e.reg.lookup(e.ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	// An item as written before sources were recorded.
	if _, err := e.reg.writeItem(e.ctx, rec.ref("r"), "old", "put", func(itemRow) (itemWrite, error) {
		return itemWrite{ts: at(0), attrs: []byte(`{}`), expMs: at(time.Hour).UnixMilli()}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(at(8 * time.Minute))
	e.put("r", "def2", at(0), `{}`, nil)
	e.put("r", "patched", at(0), `{}`, nil)
	e.clock.Set(at(10 * time.Minute))
	if _, err := e.reg.Patch(e.ctx, "r", PatchItem{Key: "patched", Attributes: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]ttlSource{"def": srcDefault, "own": srcOwn, "old": srcUnknown, "def2": srcDefault, "patched": srcDefault} {
		r, err := e.reg.readItem(e.ctx, rec.ref("r"), key)
		if err != nil || sourceOf(r.ver) != want {
			t.Fatalf("%s: source %d (version %d), want %d (%v)", key, sourceOf(r.ver), r.ver, want, err)
		}
	}
	before, _ := e.get("r", "def2")

	reg, err := New(e.ctx, e.cnt, Options{Now: e.clock.Now, ReadParallelism: b.readParallelism, RewriteBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	reg.guarded = e.reg.guarded
	if _, _, err := reg.CreateTable(e.ctx, "r", Config{DefaultTTL: 5 * time.Minute, Rewrite: true}); err != nil {
		t.Fatal(err)
	}
	j, ok, err := reg.Rewrite(e.ctx, "r")
	if err != nil || !ok || j.State != rewrite.StateRunning || j.TTL != 5*time.Minute {
		t.Fatalf("job after the request: %+v %v %v", j, ok, err)
	}
	e.clock.Advance(reg.opts.CacheTTL)
	if err := reg.RunRewrites(e.ctx, rewrite.FenceAfter(1), nil); !errors.Is(err, rewrite.ErrFenceLost) {
		t.Fatalf("run stopped by its fence: %v", err)
	}
	// The listing's order is (timestamp, key): def and def2 first.
	if j, _, _ = reg.Rewrite(e.ctx, "r"); j.State != rewrite.StateRunning || j.Scanned != 2 || j.Removed != 1 || j.Rewritten != 1 {
		t.Fatalf("job after one batch: %+v", j)
	}

	other, err := New(e.ctx, e.cnt, Options{Now: e.clock.Now, ReadParallelism: b.readParallelism, RewriteBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	other.guarded = e.reg.guarded
	if err := other.RunRewrites(e.ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if j, _, _ = other.Rewrite(e.ctx, "r"); j.State != rewrite.StateDone || j.Scanned != 5 || j.Rewritten != 2 || j.Removed != 1 || j.Skipped != 2 {
		t.Fatalf("job at its end: %+v", j)
	}
	if _, ok := e.get("r", "def"); ok {
		t.Fatal("an item whose new expiry had passed survived")
	}
	for key, want := range map[string]time.Time{"def2": at(13 * time.Minute), "patched": at(15 * time.Minute), "own": at(2 * time.Hour), "old": at(time.Hour)} {
		it, ok := e.get("r", key)
		if !ok || !it.ExpiresAt.Equal(want) {
			t.Fatalf("%s: %+v %v, want expiry %s", key, it, ok, want)
		}
	}
	if after, _ := e.get("r", "def2"); after.Version == before.Version {
		t.Fatal("a rewritten item kept its version")
	}
	if got := keys(e.listAll("r", nil, 2)); len(got) != 4 {
		t.Fatalf("listing after the rewrite: %q", got)
	}
	// A second rewrite to the same default counts from the same writes.
	if _, _, err := other.CreateTable(e.ctx, "r", Config{DefaultTTL: 5 * time.Minute, Rewrite: true}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(reg.opts.CacheTTL)
	if err := other.RunRewrites(e.ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if j, _, _ = other.Rewrite(e.ctx, "r"); j.State != rewrite.StateDone || j.Scanned != 4 || j.Skipped != 4 {
		t.Fatalf("a repeated rewrite: %+v", j)
	}
	e.clock.Set(at(13 * time.Minute))
	if _, ok := e.get("r", "def2"); ok {
		t.Fatal("def2 outlived its rewritten expiry")
	}
	if it, ok := e.get("r", "patched"); !ok || !it.ExpiresAt.Equal(at(15*time.Minute)) {
		t.Fatalf("patched at 13m: %+v %v", it, ok)
	}
}

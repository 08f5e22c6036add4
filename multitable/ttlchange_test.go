package multitable

import (
	"testing"
	"time"
)

// testDefaultTTLChange changes a table's default TTL in place, shorter
// then to none: items put before a change keep their expiry, items put
// after it without a TTL of their own get the new default, and listings
// agree with Get.
func testDefaultTTLChange(t *testing.T, b backend) {
	e := newEnv(t, b)
	e.create("d", time.Hour)
	e.put("d", "before", at(0), `{}`, nil)
	e.put("d", "own", at(0), `{}`, ttlp(2*time.Hour))

	tb, created, err := e.reg.CreateTable(e.ctx, "d", Config{DefaultTTL: 10 * time.Minute})
	if err != nil || created || tb.DefaultTTL != 10*time.Minute {
		t.Fatalf("shorten the default TTL: %+v created=%v %v", tb, created, err)
	}
	e.put("d", "after", at(0), `{}`, nil)
	check := func(key string, wantExp time.Time) {
		t.Helper()
		it, ok := e.get("d", key)
		if !ok || !it.ExpiresAt.Equal(wantExp) {
			t.Fatalf("%s: %+v %v, want expiry %s", key, it, ok, wantExp)
		}
	}
	check("before", at(time.Hour))
	check("own", at(2*time.Hour))
	check("after", at(10*time.Minute))
	keys := func() []string {
		var out []string
		for _, it := range e.listAll("d", nil, 2) {
			out = append(out, it.Key)
		}
		return out
	}
	if got := keys(); len(got) != 3 {
		t.Fatalf("listing after the change: %q", got)
	}
	e.clock.Set(at(10 * time.Minute))
	if _, ok := e.get("d", "after"); ok {
		t.Fatal("an item put after the change outlived the new default TTL")
	}
	check("before", at(time.Hour))
	if got := keys(); len(got) != 2 {
		t.Fatalf("listing at the new default TTL: %q, want before and own", got)
	}

	// To none: items put from then on never expire, the others keep theirs.
	keep := Config{DefaultTTL: 0}
	if tb, _, err := e.reg.CreateTable(e.ctx, "d", keep); err != nil || tb.DefaultTTL != 0 {
		t.Fatalf("default TTL to none: %+v %v", tb, err)
	}
	e.put("d", "forever", at(0), `{}`, nil)
	check("forever", time.Time{})
	// KeepDefaultTTL leaves it alone, whatever DefaultTTL says.
	if tb, _, err := e.reg.CreateTable(e.ctx, "d", Config{DefaultTTL: time.Minute, KeepDefaultTTL: true}); err != nil || tb.DefaultTTL != 0 {
		t.Fatalf("create keeping the default TTL: %+v %v", tb, err)
	}
	e.clock.Set(at(time.Hour))
	if _, ok := e.get("d", "before"); ok {
		t.Fatal("an item put before the changes outlived its own expiry")
	}
	check("own", at(2*time.Hour))
	if got := keys(); len(got) != 2 {
		t.Fatalf("listing at the old default TTL: %q, want own and forever", got)
	}
	// Another registry on the same store reads the new default.
	other, err := New(e.ctx, e.cnt, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if tb, err := other.Table(e.ctx, "d"); err != nil || tb.DefaultTTL != 0 {
		t.Fatalf("table from another registry: %+v %v", tb, err)
	}
}

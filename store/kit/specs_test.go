package kit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

// catalog is a store.Catalog of specs that counts its Spec lookups; hook,
// when set, runs inside a lookup, after the spec was read.
type catalog struct {
	store.Catalog
	specs   map[string]store.TableSpec
	lookups int
	hook    func()
}

func (c *catalog) Spec(_ context.Context, name string) (store.TableSpec, error) {
	c.lookups++
	spec, ok := c.specs[name]
	if c.hook != nil {
		c.hook()
	}
	if !ok {
		return store.TableSpec{}, store.ErrTableNotFound
	}
	return spec, nil
}

func TestSpecCache(t *testing.T) {
	now := time.Unix(1000, 0)
	src := &catalog{specs: map[string]store.TableSpec{"t": {Name: "t", DefaultTTL: time.Hour}}}
	derived := 0
	c := NewSpecCache(src, time.Minute, func() time.Time { return now }, func(s *store.TableSpec) time.Duration {
		derived++
		return s.DefaultTTL
	})
	ctx := context.Background()
	get := func(what string, want time.Duration, lookups int) {
		t.Helper()
		got, err := c.Get(ctx, "t")
		if err != nil || got != want || src.lookups != lookups {
			t.Fatalf("%s: %v, %v after %d lookups; want %v after %d", what, got, err, src.lookups, want, lookups)
		}
	}
	get("first", time.Hour, 1)
	get("cached", time.Hour, 1)
	if derived != 1 {
		t.Fatalf("derived %d times, want once per lookup", derived)
	}

	// Another process changes the spec: seen once the TTL has passed.
	src.specs["t"] = store.TableSpec{Name: "t", DefaultTTL: 2 * time.Hour}
	now = now.Add(59 * time.Second)
	get("within the TTL", time.Hour, 1)
	now = now.Add(time.Second)
	get("at the TTL", 2*time.Hour, 2)
	// A clock that went back does not keep a spec forever.
	now = now.Add(-time.Hour)
	get("clock went back", 2*time.Hour, 3)

	// The decorator's own change is seen at once.
	src.specs["t"] = store.TableSpec{Name: "t", DefaultTTL: 3 * time.Hour}
	if v, ok := c.Forget("t"); !ok || v != 2*time.Hour {
		t.Fatalf("Forget = %v, %v; want the cached 2h", v, ok)
	}
	get("after Forget", 3*time.Hour, 4)
	if v, err := c.Refresh(ctx, "t"); err != nil || v != 3*time.Hour || src.lookups != 5 {
		t.Fatalf("Refresh = %v, %v after %d lookups", v, err, src.lookups)
	}

	// A missing table is an error, and not remembered.
	if _, err := c.Get(ctx, "gone"); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("missing table: %v", err)
	}
	src.specs["gone"] = store.TableSpec{Name: "gone", DefaultTTL: time.Second}
	if v, err := c.Get(ctx, "gone"); err != nil || v != time.Second {
		t.Fatalf("table created after a miss: %v, %v", v, err)
	}
	// A dropped table is forgotten when a lookup misses it.
	delete(src.specs, "t")
	if _, err := c.Refresh(ctx, "t"); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("dropped table: %v", err)
	}
	if _, ok := c.Forget("t"); ok {
		t.Fatal("a dropped table is still remembered")
	}
}

// TestSpecCacheForgetDuringLookup checks that a spec read before a Forget
// (a create or drop by the decorator, racing the lookup) is returned to
// its caller but not remembered.
func TestSpecCacheForgetDuringLookup(t *testing.T) {
	src := &catalog{specs: map[string]store.TableSpec{"t": {Name: "t", DefaultTTL: time.Hour}}}
	c := NewSpecCache(src, time.Minute, nil, func(s *store.TableSpec) time.Duration { return s.DefaultTTL })
	src.hook = func() { c.Forget("t") }
	if v, err := c.Get(context.Background(), "t"); err != nil || v != time.Hour {
		t.Fatalf("Get = %v, %v", v, err)
	}
	src.hook = nil
	if _, ok := c.Forget("t"); ok {
		t.Fatal("a spec read before a Forget was remembered")
	}
}

func TestQueryDecodesRawValues(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123).UTC()
	for _, c := range []struct {
		typ store.Type
		v   any
	}{
		{store.TypeText, "héllo"}, {store.TypeText, ""},
		{store.TypeBytes, []byte{0, 1}}, {store.TypeBytes, []byte{}},
		{store.TypeInt64, int64(-7)}, {store.TypeTimestamp, ts},
	} {
		got, err := DecodeRawValue(c.typ, RawValue(c.v))
		if err != nil || !ValuesEqual(got, c.v) {
			t.Errorf("%s %v: decoded %v, %v", c.typ, c.v, got, err)
		}
		if b, ok := got.([]byte); ok && b == nil {
			t.Errorf("%s %v: an empty byte string decoded as nil (absent)", c.typ, c.v)
		}
	}
	if v, err := DecodeRawValue(store.TypeInt64, nil); v != nil || err != nil {
		t.Errorf("absent: %v, %v", v, err)
	}
	if _, err := DecodeRawValue(store.TypeInt64, []byte{1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("short int64: %v", err)
	}
}

package lists

import (
	"crypto/md5"
	"encoding/base64"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/keyenc"
)

func TestItemKeyFormat(t *testing.T) {
	value := []byte("story-1")
	sum := md5.Sum(value)
	md5b64 := base64.StdEncoding.EncodeToString(sum[:])
	for _, tc := range []struct {
		ts   time.Time
		want string
	}{
		{time.Unix(0, 1724949845430000000), "1724949845430000000#" + md5b64},
		{time.Unix(0, 0), "0000000000000000000#" + md5b64},
		{time.Unix(0, 42), "0000000000000000042#" + md5b64},
		{time.Unix(0, math.MaxInt64), "9223372036854775807#" + md5b64},
	} {
		got := ItemKey(tc.ts, value)
		if got != tc.want {
			t.Errorf("ItemKey(%d) = %q, want %q", tc.ts.UnixNano(), got, tc.want)
		}
		ts, err := parseItemKey(got)
		if err != nil || !ts.Equal(tc.ts) {
			t.Errorf("parseItemKey(%q) = %s, %v", got, ts, err)
		}
	}
	for _, bad := range []string{"", "123#abc", "9223372036854775808#" + md5b64, "00000000000000000x0#" + md5b64, "0000000000000000000-" + md5b64} {
		if _, err := parseItemKey(bad); err == nil {
			t.Errorf("parseItemKey(%q) accepted", bad)
		}
	}
}

// TestItemKeyOrder checks that item keys sort as (timestamp, MD5): a later
// item always has a greater key, whatever the values.
func TestItemKeyOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		a := rapid.Int64Range(0, math.MaxInt64).Draw(rt, "a")
		b := rapid.Int64Range(0, math.MaxInt64).Draw(rt, "b")
		va := rapid.SliceOf(rapid.Byte()).Draw(rt, "va")
		vb := rapid.SliceOf(rapid.Byte()).Draw(rt, "vb")
		ka, kb := ItemKey(time.Unix(0, a), va), ItemKey(time.Unix(0, b), vb)
		if a < b && ka >= kb || a > b && ka <= kb {
			rt.Fatalf("timestamps %d, %d but keys %q, %q", a, b, ka, kb)
		}
	})
}

// TestMetaKeyUnambiguous checks that different feature triples never share
// a meta key or a table name, and that every name is a valid table name.
func TestMetaKeyUnambiguous(t *testing.T) {
	name := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', '#', '|', '/', '"', '\\', 0, ',', '[', ']', 'é'}), 0, 6, -1)
	rapid.Check(t, func(rt *rapid.T) {
		x := FeatureID{EntityType: "e" + name.Draw(rt, "xe"), Feature: "n" + name.Draw(rt, "xn"), Version: name.Draw(rt, "xv")}
		y := FeatureID{EntityType: "e" + name.Draw(rt, "ye"), Feature: "n" + name.Draw(rt, "yn"), Version: name.Draw(rt, "yv")}
		kx, err := metaKey(x)
		if err != nil {
			rt.Fatal(err)
		}
		ky, err := metaKey(y)
		if err != nil {
			rt.Fatal(err)
		}
		if (kx == ky) != (x == y) {
			rt.Fatalf("%v and %v: meta keys %q and %q", x, y, kx, ky)
		}
		for i := range 3 {
			nx, ny := candidateName(kx, i), candidateName(ky, i)
			if !store.NamePattern.MatchString(nx) || len(nx) > store.MaxNameLen {
				rt.Fatalf("table name %q is not a valid table name", nx)
			}
			if (nx == ny) != (x == y) {
				rt.Fatalf("%v and %v: table names %q and %q", x, y, nx, ny)
			}
		}
	})
}

// TestEncodedItemTime checks the word-at-a-time timestamp parse of encoded
// item keys against parseItemKey, on valid keys and on keys with one byte
// of their digits or separator corrupted.
func TestEncodedItemTime(t *testing.T) {
	encode := func(key string) []byte { return keyenc.AppendString(nil, key, true) }
	encodedItemTime := func(enc []byte) (time.Time, error) {
		ts, _, err := encodedItemTime(nil, enc)
		return ts, err
	}
	for _, ns := range []int64{0, 1, 999_999_999, 1_790_000_000_123_456_789, math.MaxInt64} {
		key := ItemKey(time.Unix(0, ns), []byte("v"))
		got, err := encodedItemTime(encode(key))
		if err != nil || got.UnixNano() != ns || got.Location() != time.UTC {
			t.Errorf("%s: %v, %v; want %d UTC", key, got, err, ns)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		key := []byte(ItemKey(time.Unix(0, rapid.Int64Min(0).Draw(t, "ns")), []byte("v")))
		if rapid.Bool().Draw(t, "corrupt") {
			key[rapid.IntRange(0, tsDigits).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
		}
		want, wantErr := parseItemKey(string(key))
		got, err := encodedItemTime(encode(string(key)))
		if (err == nil) != (wantErr == nil) || !got.Equal(want) {
			t.Fatalf("%q: %v, %v; parseItemKey %v, %v", key, got, err, want, wantErr)
		}
		// The in-place read agrees, escaped bytes (a corrupted NUL) included.
		ns, err := encodedItemNanos(encode(string(key)))
		if (err == nil) != (wantErr == nil) || (err == nil && ns != want.UnixNano()) {
			t.Fatalf("%q: encodedItemNanos %d, %v; parseItemKey %v, %v", key, ns, err, want, wantErr)
		}
	})
	if _, err := encodedItemTime(encode("9999999999999999999#" + strings.Repeat("A", 24))); err == nil {
		t.Error("a timestamp past math.MaxInt64 was accepted")
	}
	if _, err := encodedItemNanos(encode("9999999999999999999#" + strings.Repeat("A", 24))); err == nil {
		t.Error("encodedItemNanos accepted a timestamp past math.MaxInt64")
	}
}

// TestExactlyLive checks the integer expiry test of a read against the same
// rule in time.Time: ts + (expMs - ceilMilli(ts)) after now.
func TestExactlyLive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ts := rapid.Int64Range(0, math.MaxInt64-int64(48*time.Hour)).Draw(t, "ts")
		ttl := time.Duration(rapid.Int64Range(1, int64(24*time.Hour)/int64(time.Millisecond)).Draw(t, "ttlMs")) * time.Millisecond
		tsT := time.Unix(0, ts)
		expMs := ceilMilli(tsT.Add(ttl)).UnixMilli()
		now := ts + rapid.Int64Range(-int64(time.Hour), int64(25*time.Hour)).Draw(t, "after")
		want := tsT.Add(ttl).After(time.Unix(0, now))
		if got := exactlyLive(ts, expMs, now); got != want {
			t.Fatalf("ts %d, ttl %v, now %d: %v, want %v", ts, ttl, now, got, want)
		}
	})
	// At the nanosecond of expiry, with ts not on a millisecond.
	ts, ttl := int64(1_790_000_000_123_456_789), int64(time.Minute)
	expMs := ceilMilli(time.Unix(0, ts+ttl)).UnixMilli()
	if !exactlyLive(ts, expMs, ts+ttl-1) || exactlyLive(ts, expMs, ts+ttl) {
		t.Error("an item's life did not end at its exact expiry")
	}
	if !exactlyLive(5, 0, math.MaxInt64) {
		t.Error("an item without expiry is not live")
	}
	if !exactlyLive(0, math.MaxInt64, math.MaxInt64) {
		t.Error("an expiry past what nanoseconds hold ended the item")
	}
}

package keyenc

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// The values below are listed in ascending order; every test checks that
// their encodings sort the same way ascending and the opposite way
// descending, and that each decodes back to itself.

var orderedInts = []int64{math.MinInt64, math.MinInt64 + 1, -1 << 32, -256, -1, 0, 1, 255, 256, 1 << 32, math.MaxInt64 - 1, math.MaxInt64}

// orderedStrings covers empty strings, NUL and 0xFF bytes, and strings that
// are prefixes of each other, where an escaping scheme usually goes wrong.
var orderedStrings = []string{
	"",
	"\x00",
	"\x00\x00",
	"\x00\x01",
	"\x00\xff",
	"\x01",
	"a",
	"a\x00",
	"a\x00\x00",
	"a\x00b",
	"a\x01",
	"ab",
	"abc",
	"b",
	"\xfe",
	"\xff",
	"\xff\x00",
	"\xff\xff",
}

var orderedTimes = []time.Time{
	time.UnixMilli(math.MinInt64).UTC(),
	time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(1969, 12, 31, 23, 59, 59, 998_000_000, time.UTC),
	time.UnixMilli(-1).UTC(),
	time.UnixMilli(0).UTC(),
	time.UnixMilli(1).UTC(),
	time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
	time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
	time.UnixMilli(math.MaxInt64).UTC(),
}

func checkSorted[T any](t *testing.T, vals []T, enc func([]byte, T, bool) []byte) {
	t.Helper()
	for _, desc := range []bool{false, true} {
		for i := 1; i < len(vals); i++ {
			a, b := enc(nil, vals[i-1], desc), enc(nil, vals[i], desc)
			c := bytes.Compare(a, b)
			if (!desc && c >= 0) || (desc && c <= 0) {
				t.Errorf("desc=%v: encodings of %#v (%x) and %#v (%x) compare %d", desc, vals[i-1], a, vals[i], b, c)
			}
		}
	}
}

func TestInt64(t *testing.T) {
	checkSorted(t, orderedInts, AppendInt64)
	for _, v := range orderedInts {
		for _, desc := range []bool{false, true} {
			enc := AppendInt64([]byte("prefix"), v, desc)
			got, rest, err := DecodeInt64(enc[len("prefix"):], desc)
			if err != nil || got != v || len(rest) != 0 {
				t.Errorf("desc=%v: DecodeInt64(%x) = %d, %x, %v; want %d", desc, enc, got, rest, err, v)
			}
		}
	}
	if got := AppendInt64(nil, 0, false); !bytes.Equal(got, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("encoding of 0 = %x, want sign bit flipped", got)
	}
}

func TestString(t *testing.T) {
	checkSorted(t, orderedStrings, AppendString)
	for _, s := range orderedStrings {
		for _, desc := range []bool{false, true} {
			enc := AppendString(nil, s, desc)
			got, rest, err := DecodeString(append(enc, 0x42), desc)
			if err != nil || got != s || !bytes.Equal(rest, []byte{0x42}) {
				t.Errorf("desc=%v: DecodeString(%x) = %q, %x, %v; want %q", desc, enc, got, rest, err, s)
			}
			// Bytes and strings share one encoding, so a bytes column and
			// a text column sort alike.
			if b := AppendBytes(nil, []byte(s), desc); !bytes.Equal(b, enc) {
				t.Errorf("desc=%v: AppendBytes(%q) = %x, AppendString = %x", desc, s, b, enc)
			}
		}
	}
}

func TestBytes(t *testing.T) {
	vals := make([][]byte, len(orderedStrings))
	for i, s := range orderedStrings {
		vals[i] = []byte(s)
	}
	checkSorted(t, vals, AppendBytes)
	for _, in := range [][]byte{nil, {}, {0}, {0xff}, {0, 0xff, 0, 1}} {
		for _, desc := range []bool{false, true} {
			got, rest, err := DecodeBytes(AppendBytes(nil, in, desc), desc)
			if err != nil || !bytes.Equal(got, in) || len(rest) != 0 {
				t.Errorf("desc=%v: round trip of %x = %x, %x, %v", desc, in, got, rest, err)
			}
			// An empty value decodes to an empty, non-nil slice: in a Row a
			// nil value means "absent", which an empty bytes value is not.
			if got == nil && err == nil {
				t.Errorf("desc=%v: round trip of %x decoded to a nil slice", desc, in)
			}
		}
	}
}

func TestDecodeBytesDoesNotAlias(t *testing.T) {
	enc := AppendBytes(nil, []byte("abc"), false)
	got, _, err := DecodeBytes(enc, false)
	if err != nil {
		t.Fatal(err)
	}
	enc[0] = 'z'
	if string(got) != "abc" {
		t.Fatalf("decoded value changed with its input: %q", got)
	}
}

func TestTime(t *testing.T) {
	checkSorted(t, orderedTimes, AppendTime)
	for _, ts := range orderedTimes {
		for _, desc := range []bool{false, true} {
			got, rest, err := DecodeTime(AppendTime(nil, ts, desc), desc)
			if err != nil || !got.Equal(ts) || got.Location() != time.UTC || len(rest) != 0 {
				t.Errorf("desc=%v: round trip of %v = %v, %x, %v", desc, ts, got, rest, err)
			}
		}
	}
}

func TestTimeMillisecondPrecision(t *testing.T) {
	// Sub-millisecond parts are dropped by flooring, also before 1970, so
	// the encoding stays monotonic: a later instant never sorts first.
	cases := []struct {
		in   time.Time
		want int64 // Unix ms
	}{
		{time.Unix(0, 999_999), 0},
		{time.Unix(0, 1_000_000), 1},
		{time.Unix(0, -1), -1},
		{time.Unix(0, -999_999), -1},
		{time.Unix(0, -1_000_000), -1},
		{time.Unix(0, -1_000_001), -2},
		{time.Date(1969, 7, 20, 20, 17, 40, 123_456_789, time.UTC), -14182939877},
		{time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("X", 3600)), 1772362800000},
	}
	for _, c := range cases {
		for _, desc := range []bool{false, true} {
			got, _, err := DecodeTime(AppendTime(nil, c.in, desc), desc)
			if err != nil || got.UnixMilli() != c.want || got.Nanosecond()%1_000_000 != 0 {
				t.Errorf("desc=%v: %v decoded to %v (%d ms), %v; want %d ms", desc, c.in, got, got.UnixMilli(), err, c.want)
			}
		}
	}
	prev := AppendTime(nil, time.Unix(0, -3_000_000), false)
	for ns := int64(-3_000_000); ns <= 3_000_000; ns += 250_000 {
		cur := AppendTime(nil, time.Unix(0, ns), false)
		if bytes.Compare(prev, cur) > 0 {
			t.Fatalf("encoding not monotonic at %d ns", ns)
		}
		prev = cur
	}
}

func TestTuplePrefix(t *testing.T) {
	// The encoding of a tuple prefix is a byte prefix of the encoding of
	// the tuple, in both directions and with mixed directions.
	tuple := []any{"a\x00b", int64(-7), []byte{0, 0xff}, time.UnixMilli(-1)}
	for mask := range 1 << len(tuple) {
		var full []byte
		var err error
		for i, v := range tuple {
			if full, err = Append(full, v, mask&(1<<i) != 0); err != nil {
				t.Fatal(err)
			}
		}
		var pre []byte
		for i, v := range tuple {
			pre, _ = Append(pre, v, mask&(1<<i) != 0)
			if !bytes.HasPrefix(full, pre) {
				t.Fatalf("mask %b: encoding of the first %d values %x is not a prefix of %x", mask, i+1, pre, full)
			}
		}
	}
}

func TestAppendRefusesUnknownTypes(t *testing.T) {
	for _, v := range []any{nil, 1, int32(1), uint64(1), 1.5, true, &time.Time{}, []string{"a"}} {
		dst := []byte("keep")
		got, err := Append(dst, v, false)
		if err == nil {
			t.Errorf("Append(%T) succeeded", v)
		}
		if string(got) != "keep" {
			t.Errorf("Append(%T) changed dst to %q", v, got)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unterminated", []byte("abc")},
		{"escape at end", []byte{'a', 0}},
		{"bad escape", []byte{'a', 0, 0x02, 0, 1}},
		{"escape then NUL", []byte{0, 0}},
	}
	for _, c := range cases {
		for _, desc := range []bool{false, true} {
			b := slices.Clone(c.b)
			if desc {
				invert(b)
			}
			if _, _, err := DecodeBytes(b, desc); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s desc=%v: DecodeBytes(%x) err = %v, want ErrCorrupt", c.name, desc, b, err)
			}
			if _, _, err := DecodeString(b, desc); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s desc=%v: DecodeString(%x) err = %v, want ErrCorrupt", c.name, desc, b, err)
			}
		}
	}
	for n := range 8 {
		if _, _, err := DecodeInt64(make([]byte, n), false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeInt64 of %d bytes: err = %v, want ErrCorrupt", n, err)
		}
		if _, _, err := DecodeTime(make([]byte, n), true); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTime of %d bytes: err = %v, want ErrCorrupt", n, err)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte{}, nil},
		{[]byte{0xff}, nil},
		{[]byte{0xff, 0xff}, nil},
		{[]byte{0x00}, []byte{0x01}},
		{[]byte{'a', 0x00, 0x01}, []byte{'a', 0x00, 0x02}},
		{[]byte{'a', 0xff}, []byte{'b'}},
		{[]byte{0x01, 0xfe, 0xff, 0xff}, []byte{0x01, 0xff}},
	}
	for _, c := range cases {
		in := slices.Clone(c.in)
		got := PrefixEnd(in)
		if !bytes.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
		if !bytes.Equal(in, c.in) {
			t.Errorf("PrefixEnd modified its input: %x", in)
		}
	}
	// Every key with the prefix sorts before PrefixEnd, and PrefixEnd itself
	// does not have the prefix.
	for _, s := range orderedStrings {
		pre := AppendString(nil, s, false)
		end := PrefixEnd(pre)
		for _, suffix := range orderedStrings {
			k := AppendString(slices.Clone(pre), suffix, false)
			if bytes.Compare(k, end) >= 0 {
				t.Errorf("key %x with prefix %x is not below PrefixEnd %x", k, pre, end)
			}
		}
		if bytes.HasPrefix(end, pre) {
			t.Errorf("PrefixEnd(%x) = %x has the prefix", pre, end)
		}
	}
}

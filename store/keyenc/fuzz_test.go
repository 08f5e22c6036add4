package keyenc

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"
)

// The fuzz targets build typed tuples from raw fuzz input. A schema byte
// picks each component's type (low two bits) and direction (bit 2); the
// values are cut from a data string, so one input yields tuples of any
// length with every type in any position.

type kind uint8

const (
	kString kind = iota
	kBytes
	kInt
	kTime
)

type comp struct {
	kind kind
	desc bool
}

func parseSchema(schema []byte) []comp {
	if len(schema) > 8 {
		schema = schema[:8]
	}
	out := make([]comp, len(schema))
	for i, s := range schema {
		out[i] = comp{kind: kind(s & 3), desc: s&4 != 0}
	}
	return out
}

// parseTuple cuts one value per component from data: a length byte then
// that many bytes for strings and bytes (biased towards short values and
// NULs so that prefixes and escapes are common), eight bytes for int64s,
// and eight bytes plus a sub-millisecond nanosecond count for timestamps.
func parseTuple(schema []comp, data []byte) []any {
	next := func(n int) []byte {
		if n > len(data) {
			n = len(data)
		}
		b := data[:n]
		data = data[n:]
		return b
	}
	u64 := func() uint64 {
		var buf [8]byte
		copy(buf[:], next(8))
		return binary.BigEndian.Uint64(buf[:])
	}
	out := make([]any, len(schema))
	for i, c := range schema {
		switch c.kind {
		case kString, kBytes:
			var n int
			if b := next(1); len(b) == 1 {
				n = int(b[0] % 8)
			}
			v := bytes.Clone(next(n))
			if c.kind == kString {
				out[i] = string(v)
			} else {
				out[i] = v
			}
		case kInt:
			out[i] = int64(u64())
		case kTime:
			ms := int64(u64())
			var ns int64
			if b := next(1); len(b) == 1 {
				ns = int64(b[0]) * 3_921 // 0..999_855 ns: below one millisecond
			}
			out[i] = time.UnixMilli(ms).Add(time.Duration(ns))
		}
	}
	return out
}

func encodeTuple(t *testing.T, schema []comp, vals []any) []byte {
	var out []byte
	for i, v := range vals {
		var err error
		if out, err = Append(out, v, schema[i].desc); err != nil {
			t.Fatalf("Append(%T): %v", v, err)
		}
	}
	return out
}

// compareTuples is the reference tuple order: component by component, each
// in its natural order (timestamps at millisecond precision), reversed for
// descending components.
func compareTuples(schema []comp, a, b []any) int {
	for i, c := range schema {
		var r int
		switch x := a[i].(type) {
		case string:
			r = cmp.Compare(x, b[i].(string))
		case []byte:
			r = bytes.Compare(x, b[i].([]byte))
		case int64:
			r = cmp.Compare(x, b[i].(int64))
		case time.Time:
			r = cmp.Compare(x.UnixMilli(), b[i].(time.Time).UnixMilli())
		}
		if c.desc {
			r = -r
		}
		if r != 0 {
			return r
		}
	}
	return 0
}

func decodeTuple(schema []comp, b []byte) ([]any, []byte, error) {
	out := make([]any, len(schema))
	for i, c := range schema {
		var err error
		switch c.kind {
		case kString:
			out[i], b, err = DecodeString(b, c.desc)
		case kBytes:
			out[i], b, err = DecodeBytes(b, c.desc)
		case kInt:
			out[i], b, err = DecodeInt64(b, c.desc)
		case kTime:
			out[i], b, err = DecodeTime(b, c.desc)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return out, b, nil
}

func addSeeds(f *testing.F, two bool) {
	type seed struct {
		schema []byte
		a, b   []byte
	}
	be := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	seeds := []seed{
		{[]byte{0}, []byte{0}, []byte{1, 0}},           // "" vs "\x00"
		{[]byte{4}, []byte{1, 'a'}, []byte{2, 'a', 0}}, // desc "a" vs "a\x00"
		{[]byte{0, 2}, cat([]byte{1, 'a'}, be(5)), cat([]byte{2, 'a', 0}, be(-5))},
		{[]byte{1, 1}, []byte{2, 0, 0xff, 0}, []byte{1, 0, 1, 0xff}}, // bytes with escapes
		{[]byte{2}, be(math.MinInt64), be(math.MaxInt64)},
		{[]byte{6}, be(-1), be(0)},
		{[]byte{3}, cat(be(-1), []byte{255}), cat(be(-1), []byte{0})}, // same ms, different ns
		{[]byte{7, 0}, cat(be(-62135596800000), []byte{0}, []byte{3, 'x', 'y', 'z'}), cat(be(0), []byte{9}, []byte{0})},
		{[]byte{0, 4, 1, 5, 2, 6, 3, 7}, bytes.Repeat([]byte{3, 'a', 0, 0xff}, 12), bytes.Repeat([]byte{2, 'a', 0}, 16)},
		{nil, nil, nil},
	}
	for _, s := range seeds {
		if two {
			f.Add(s.schema, s.a, s.b)
		} else {
			f.Add(s.schema, s.a)
		}
	}
}

// FuzzRoundTrip checks that every tuple decodes back to itself (timestamps
// at millisecond precision, in UTC), that encodings of prefixes are byte
// prefixes, and that decoding stops exactly at the end of the tuple.
func FuzzRoundTrip(f *testing.F) {
	addSeeds(f, false)
	f.Fuzz(func(t *testing.T, rawSchema, data []byte) {
		schema := parseSchema(rawSchema)
		vals := parseTuple(schema, data)
		enc := encodeTuple(t, schema, vals)
		got, rest, err := decodeTuple(schema, append(bytes.Clone(enc), 0xAB, 0xCD))
		if err != nil {
			t.Fatalf("decode %x: %v", enc, err)
		}
		if !bytes.Equal(rest, []byte{0xAB, 0xCD}) {
			t.Fatalf("decode %x left %x, want the trailing AB CD", enc, rest)
		}
		for i := range vals {
			want := vals[i]
			if ts, ok := want.(time.Time); ok {
				want = time.UnixMilli(ts.UnixMilli()).UTC()
				if g := got[i].(time.Time); !g.Equal(want.(time.Time)) || g.Location() != time.UTC {
					t.Fatalf("component %d: got %v, want %v", i, g, want)
				}
				continue
			}
			if fmt.Sprintf("%#v", got[i]) != fmt.Sprintf("%#v", want) {
				t.Fatalf("component %d: got %#v, want %#v", i, got[i], want)
			}
		}
		if compareTuples(schema, vals, got) != 0 {
			t.Fatalf("decoded tuple %v does not compare equal to %v", got, vals)
		}
		pre := encodeTuple(t, schema[:len(schema)/2], vals[:len(schema)/2])
		if !bytes.HasPrefix(enc, pre) {
			t.Fatalf("prefix encoding %x is not a prefix of %x", pre, enc)
		}
		// Re-encoding the decoded values reproduces the bytes exactly: the
		// encoding is canonical, which page tokens rely on.
		if again := encodeTuple(t, schema, got); !bytes.Equal(again, enc) {
			t.Fatalf("re-encoding gave %x, want %x", again, enc)
		}
	})
}

// FuzzOrder checks that the bytewise order of two tuples' encodings is the
// tuple order, for ascending, descending and mixed directions, and that
// equal encodings mean equal tuples.
func FuzzOrder(f *testing.F) {
	addSeeds(f, true)
	f.Fuzz(func(t *testing.T, rawSchema, a, b []byte) {
		schema := parseSchema(rawSchema)
		ta, tb := parseTuple(schema, a), parseTuple(schema, b)
		ea, eb := encodeTuple(t, schema, ta), encodeTuple(t, schema, tb)
		want := compareTuples(schema, ta, tb)
		if got := bytes.Compare(ea, eb); got != want {
			t.Fatalf("tuples %#v and %#v compare %d, encodings %x and %x compare %d", ta, tb, want, ea, eb, got)
		}
		// Extending both tuples by any suffix keeps a strict order: no
		// component encoding is a prefix of a different one.
		if want != 0 {
			xa := AppendString(bytes.Clone(ea), "\x00\xff", false)
			xb := AppendInt64(bytes.Clone(eb), math.MinInt64, true)
			if got := bytes.Compare(xa, xb); got != want {
				t.Fatalf("extended encodings %x and %x compare %d, want %d", xa, xb, got, want)
			}
		}
	})
}

// FuzzDecode feeds arbitrary bytes to the decoders: they never panic, and
// whatever they accept re-encodes to exactly the bytes consumed, so a
// forged key or page token cannot alias a different one.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{3}, []byte{0, 1})
	f.Add([]byte{0, 2}, []byte{'a', 0, 0xff, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{4}, []byte{0xff, 0x00, 0xfe})
	f.Add([]byte{1}, []byte{0, 2})
	f.Fuzz(func(t *testing.T, rawSchema, data []byte) {
		schema := parseSchema(rawSchema)
		vals, rest, err := decodeTuple(schema, data)
		if err != nil {
			return
		}
		consumed := data[:len(data)-len(rest)]
		if again := encodeTuple(t, schema, vals); !bytes.Equal(again, consumed) {
			t.Fatalf("decoded %x to %#v, which re-encodes to %x", consumed, vals, again)
		}
	})
}

package keyenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrCorrupt is returned when decoding bytes that no encoder produced.
var ErrCorrupt = errors.New("keyenc: malformed key")

const (
	escape     = 0x00
	escapedNUL = 0xFF
	terminator = 0x01
)

// AppendInt64 appends the encoding of v.
func AppendInt64(dst []byte, v int64, desc bool) []byte {
	u := uint64(v) ^ (1 << 63)
	if desc {
		u = ^u
	}
	return binary.BigEndian.AppendUint64(dst, u)
}

// AppendTime appends the encoding of t at millisecond precision.
func AppendTime(dst []byte, t time.Time, desc bool) []byte {
	return AppendInt64(dst, t.UnixMilli(), desc)
}

// AppendString appends the encoding of s.
func AppendString(dst []byte, s string, desc bool) []byte {
	start := len(dst)
	for {
		i := strings.IndexByte(s, escape)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, escape, escapedNUL)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	dst = append(dst, escape, terminator)
	if desc {
		invert(dst[start:])
	}
	return dst
}

// AppendBytes appends the encoding of b; it sorts exactly as AppendString.
func AppendBytes(dst []byte, b []byte, desc bool) []byte {
	start := len(dst)
	for {
		i := bytes.IndexByte(b, escape)
		if i < 0 {
			break
		}
		dst = append(dst, b[:i]...)
		dst = append(dst, escape, escapedNUL)
		b = b[i+1:]
	}
	dst = append(dst, b...)
	dst = append(dst, escape, terminator)
	if desc {
		invert(dst[start:])
	}
	return dst
}

// Append appends the encoding of v, which must be a string, int64,
// time.Time or []byte.
func Append(dst []byte, v any, desc bool) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return AppendString(dst, x, desc), nil
	case int64:
		return AppendInt64(dst, x, desc), nil
	case time.Time:
		return AppendTime(dst, x, desc), nil
	case []byte:
		return AppendBytes(dst, x, desc), nil
	}
	return dst, fmt.Errorf("keyenc: cannot encode %T", v)
}

// DecodeInt64 decodes an int64 from the front of b and returns the rest.
func DecodeInt64(b []byte, desc bool) (int64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, ErrCorrupt
	}
	u := binary.BigEndian.Uint64(b)
	if desc {
		u = ^u
	}
	return int64(u ^ (1 << 63)), b[8:], nil
}

// DecodeTime decodes a timestamp (UTC, millisecond precision).
func DecodeTime(b []byte, desc bool) (time.Time, []byte, error) {
	ms, rest, err := DecodeInt64(b, desc)
	if err != nil {
		return time.Time{}, nil, err
	}
	return time.UnixMilli(ms).UTC(), rest, nil
}

// DecodeBytes decodes a byte string into a new slice and returns the rest.
func DecodeBytes(b []byte, desc bool) ([]byte, []byte, error) {
	n, err := decodedLen(b, desc)
	if err != nil {
		return nil, nil, err
	}
	return AppendDecodedBytes(make([]byte, 0, n), b, desc)
}

// AppendDecodedBytes decodes a byte string from the front of b, appends it
// to dst and returns dst and the rest of b. It lets hot read paths decode
// into a buffer they reuse.
func AppendDecodedBytes(dst, b []byte, desc bool) ([]byte, []byte, error) {
	esc, term, nul := byte(escape), byte(terminator), byte(escapedNUL)
	if desc {
		esc, term, nul = ^esc, ^term, ^nul
	}
	for {
		i := bytes.IndexByte(b, esc)
		if i < 0 || i+1 >= len(b) {
			return nil, nil, ErrCorrupt
		}
		if desc {
			dst = appendInverted(dst, b[:i])
		} else {
			dst = append(dst, b[:i]...)
		}
		switch b[i+1] {
		case term:
			return dst, b[i+2:], nil
		case nul:
			dst = append(dst, 0)
			b = b[i+2:]
		default:
			return nil, nil, ErrCorrupt
		}
	}
}

// decodedLen is the length of the byte string encoded at the front of b.
func decodedLen(b []byte, desc bool) (int, error) {
	esc, term, nul := byte(escape), byte(terminator), byte(escapedNUL)
	if desc {
		esc, term, nul = ^esc, ^term, ^nul
	}
	n := 0
	for {
		i := bytes.IndexByte(b, esc)
		if i < 0 || i+1 >= len(b) {
			return 0, ErrCorrupt
		}
		n += i
		switch b[i+1] {
		case term:
			return n, nil
		case nul:
			n++
			b = b[i+2:]
		default:
			return 0, ErrCorrupt
		}
	}
}

// DecodeString decodes a string.
func DecodeString(b []byte, desc bool) (string, []byte, error) {
	var buf [64]byte
	out, rest, err := AppendDecodedBytes(buf[:0], b, desc)
	return string(out), rest, err
}

// PrefixEnd returns the smallest key greater than every key with the given
// prefix, or nil when there is none (the prefix is all 0xFF).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// appendInverted appends the complement of src to dst, a word at a time.
func appendInverted(dst, src []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, len(src))[:n+len(src)]
	out := dst[n:]
	for len(src) >= 8 {
		binary.LittleEndian.PutUint64(out, ^binary.LittleEndian.Uint64(src))
		out, src = out[8:], src[8:]
	}
	for i := range src {
		out[i] = ^src[i]
	}
	return dst
}

func invert(b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, ^binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	for i := range b {
		b[i] = ^b[i]
	}
}

package server

import (
	"encoding/base64"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The hot responses (list items, index events) are encoded by appending to
// a pooled buffer rather than through encoding/json: a page of 100 items
// then costs no allocation per item and no reflection, and goes out in one
// Write with its Content-Length. The output is byte for byte what
// json.Marshal gives for the documented shapes (json_test.go checks it), so
// the API does not change.

// maxPooledBuf bounds the buffers kept for reuse, so that one huge
// response does not pin its memory for good.
const maxPooledBuf = 1 << 20

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 16<<10)
	return &b
}}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// contentTypeJSON is shared by every response: net/http only reads a
// header's values, and Set or Add would replace or copy the slice.
var contentTypeJSON = []string{"application/json"}

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it: HTML-escaped (<, > and & as \u003c...), control characters
// escaped, U+2028 and U+2029 escaped, and invalid UTF-8 replaced by
// U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONBytes appends b as encoding/json writes a []byte: standard
// base64 in a string, or null for a nil slice.
func appendJSONBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// MessagePack is the compact encoding a client may ask for with
// "Accept: application/msgpack" on the hot reads (list items, index
// events); JSON stays the default and the documented contract. Binary
// values go as bin, not base64, and times as the timestamp extension
// (Unix seconds and nanoseconds), so a page of 100 list items is about a
// third of its JSON size and fits one network write.
const contentTypeMsgpack = "application/msgpack"

var contentTypeMsgpackHeader = []string{contentTypeMsgpack}

// wantsMsgpack reports whether the request's Accept header prefers
// MessagePack (application/msgpack or application/x-msgpack) to JSON, by
// RFC 9110's rules (section 12.5.1): each type takes the q-value of the
// most specific media range that matches it (the type itself, then
// application/*, then */*); a q of 0, or no range at all, is not
// acceptable. MessagePack is chosen when it is acceptable and its q is
// higher than JSON's, or equal and its range is listed first. Anything
// else gets JSON, the default: no Accept, a wildcard covering both, JSON
// first at equal q, and an Accept that allows neither (answered in JSON
// rather than 406). A range whose q is malformed is ignored. It runs on
// every hot read, so it allocates nothing.
func wantsMsgpack(r *http.Request) bool {
	var mp, js acceptPref
	pos := 0
	for _, accept := range r.Header["Accept"] {
		for accept != "" {
			var part string
			part, accept, _ = strings.Cut(accept, ",")
			mediaType, params, _ := strings.Cut(part, ";")
			mediaType = strings.TrimSpace(mediaType)
			if mediaType == "" {
				continue
			}
			q, ok := acceptQ(params)
			pos++
			if !ok {
				continue
			}
			switch {
			case strings.EqualFold(mediaType, contentTypeMsgpack) || strings.EqualFold(mediaType, "application/x-msgpack"):
				mp.match(2, q, pos)
			case strings.EqualFold(mediaType, "application/json"):
				js.match(2, q, pos)
			case strings.EqualFold(mediaType, "application/*"):
				mp.match(1, q, pos)
				js.match(1, q, pos)
			case mediaType == "*/*":
				mp.match(0, q, pos)
				js.match(0, q, pos)
			}
		}
	}
	if mp.q <= 0 {
		return false
	}
	return mp.q > js.q || (mp.q == js.q && mp.pos < js.pos)
}

// acceptPref is the media range of an Accept header that decides one
// type's q: the most specific that matches it, the highest q among
// equally specific ones. The zero value matches nothing (q 0).
type acceptPref struct {
	specific int // 1 + 0 for */*, 1 for application/*, 2 for the type
	q        int // in thousandths
	pos      int // 1-based position in the header
}

func (p *acceptPref) match(specific, q, pos int) {
	specific++
	if specific > p.specific || (specific == p.specific && q > p.q) {
		*p = acceptPref{specific: specific, q: q, pos: pos}
	}
}

// acceptQ reads the q parameter of a media range's parameters (after its
// first ';'), in thousandths: 1000 without one; false when it is
// malformed (RFC 9110: "0" or "1" with up to three decimals, at most 1).
func acceptQ(params string) (int, bool) {
	for params != "" {
		var param string
		param, params, _ = strings.Cut(params, ";")
		name, value, _ := strings.Cut(param, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		value = strings.TrimSpace(value)
		whole, frac, _ := strings.Cut(value, ".")
		if (whole != "0" && whole != "1") || len(frac) > 3 {
			return 0, false
		}
		q := int(whole[0]-'0') * 1000
		for i, scale := 0, 100; i < len(frac); i, scale = i+1, scale/10 {
			if frac[i] < '0' || frac[i] > '9' {
				return 0, false
			}
			q += int(frac[i]-'0') * scale
		}
		if q > 1000 {
			return 0, false
		}
		return q, true
	}
	return 1000, true
}

// The MessagePack appenders below write the smallest form the
// specification allows for each value, but for appendMsgpackArray32.

// appendMsgpackArray appends an array header for n elements.
func appendMsgpackArray(dst []byte, n int) []byte {
	switch {
	case n < 16:
		return append(dst, 0x90|byte(n))
	case n <= math.MaxUint16:
		return append(dst, 0xdc, byte(n>>8), byte(n))
	}
	return append(dst, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// appendMsgpackArray32 appends an array header whose count is filled in
// later by setMsgpackArray32, for a stream of unknown length.
func appendMsgpackArray32(dst []byte) []byte { return append(dst, 0xdd, 0, 0, 0, 0) }

// setMsgpackArray32 writes n into the header appendMsgpackArray32 left at
// dst[at:].
func setMsgpackArray32(dst []byte, at, n int) {
	dst[at+1], dst[at+2], dst[at+3], dst[at+4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
}

// appendMsgpackMap appends a map header for n (< 16) pairs.
func appendMsgpackMap(dst []byte, n int) []byte { return append(dst, 0x80|byte(n)) }

// appendMsgpackString appends s as a str.
func appendMsgpackString(dst []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, 0xd9, byte(n))
	case n <= math.MaxUint16:
		dst = append(dst, 0xda, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(dst, s...)
}

// appendMsgpackBin appends b as a bin, or nil for a nil slice.
func appendMsgpackBin(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 0xc0)
	}
	n := len(b)
	switch {
	case n <= math.MaxUint8:
		dst = append(dst, 0xc4, byte(n))
	case n <= math.MaxUint16:
		dst = append(dst, 0xc5, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0xc6, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(dst, b...)
}

// appendMsgpackTime appends t as the timestamp extension (type -1): the
// 32-bit form (seconds) for whole seconds that fit, the 64-bit form (30
// bits of nanoseconds, 34 of seconds) when the seconds fit, the 96-bit
// form otherwise.
func appendMsgpackTime(dst []byte, t time.Time) []byte {
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	if nsec == 0 && sec >= 0 && sec <= math.MaxUint32 {
		return append(dst, 0xd6, 0xff, byte(sec>>24), byte(sec>>16), byte(sec>>8), byte(sec))
	}
	if sec >= 0 && sec < 1<<34 {
		v := nsec<<34 | uint64(sec)
		return append(dst, 0xd7, 0xff,
			byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	u := uint64(sec)
	return append(dst, 0xc7, 12, 0xff,
		byte(nsec>>24), byte(nsec>>16), byte(nsec>>8), byte(nsec),
		byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32), byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

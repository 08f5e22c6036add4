package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The append encoders must write what json.Marshal writes for the shapes
// they replace, so that the hot responses keep the documented bytes.

func TestAppendJSONStringMatchesMarshal(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "<script>&</script>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"é ü 日本", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate", "a/b+c=d",
	} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		// Valid UTF-8 of any runes, or arbitrary bytes.
		s := rapid.String().Draw(t, "s")
		if rapid.Bool().Draw(t, "raw") {
			s = string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes"))
		}
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestAppendJSONBytesMatchesMarshal(t *testing.T) {
	for _, b := range [][]byte{nil, {}, {0}, []byte("story-0000000042"), {0xff, 0xfe, 0xfd, 0xfc}} {
		want, _ := json.Marshal(b)
		if got := appendJSONBytes(nil, b); string(got) != string(want) {
			t.Errorf("appendJSONBytes(%q) = %s, want %s", b, got, want)
		}
	}
}

// TestMsgpackHeaders checks each appender's header bytes against the
// MessagePack specification at the size boundaries.
func TestMsgpackHeaders(t *testing.T) {
	str := func(n int) string { return strings.Repeat("s", n) }
	bin := func(n int) []byte { return bytes.Repeat([]byte{'b'}, n) }
	for _, c := range []struct {
		name string
		got  []byte
		want []byte // the header; the payload follows it
	}{
		{"fixstr 0", appendMsgpackString(nil, ""), []byte{0xa0}},
		{"fixstr 31", appendMsgpackString(nil, str(31)), []byte{0xbf}},
		{"str8 32", appendMsgpackString(nil, str(32)), []byte{0xd9, 32}},
		{"str8 255", appendMsgpackString(nil, str(255)), []byte{0xd9, 255}},
		{"str16 256", appendMsgpackString(nil, str(256)), []byte{0xda, 1, 0}},
		{"str32 65536", appendMsgpackString(nil, str(65536)), []byte{0xdb, 0, 1, 0, 0}},
		{"nil bin", appendMsgpackBin(nil, nil), []byte{0xc0}},
		{"bin8 0", appendMsgpackBin(nil, []byte{}), []byte{0xc4, 0}},
		{"bin8 255", appendMsgpackBin(nil, bin(255)), []byte{0xc4, 255}},
		{"bin16 256", appendMsgpackBin(nil, bin(256)), []byte{0xc5, 1, 0}},
		{"bin32 65536", appendMsgpackBin(nil, bin(65536)), []byte{0xc6, 0, 1, 0, 0}},
		{"fixarray 15", appendMsgpackArray(nil, 15), []byte{0x9f}},
		{"array16 16", appendMsgpackArray(nil, 16), []byte{0xdc, 0, 16}},
		{"array32 65536", appendMsgpackArray(nil, 65536), []byte{0xdd, 0, 1, 0, 0}},
		{"fixmap 2", appendMsgpackMap(nil, 2), []byte{0x82}},
		{"timestamp32", appendMsgpackTime(nil, time.Unix(1, 0)), []byte{0xd6, 0xff, 0, 0, 0, 1}},
		{"timestamp64", appendMsgpackTime(nil, time.Unix(1, 1)), []byte{0xd7, 0xff, 0, 0, 0, 0b100, 0, 0, 0, 1}},
		{"timestamp64 past 2106", appendMsgpackTime(nil, time.Unix(1<<32, 0)), []byte{0xd7, 0xff, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"timestamp96", appendMsgpackTime(nil, time.Unix(-1, 5)), []byte{0xc7, 12, 0xff, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	} {
		if !bytes.HasPrefix(c.got, c.want) {
			n := min(len(c.got), len(c.want)+2)
			t.Errorf("%s: % x..., want % x...", c.name, c.got[:n], c.want)
		}
	}
	b := appendMsgpackArray32([]byte{0x81})
	setMsgpackArray32(b, 1, 70000)
	if want := []byte{0x81, 0xdd, 0, 1, 0x11, 0x70}; !bytes.Equal(b, want) {
		t.Errorf("array32 backfilled % x, want % x", b, want)
	}
}

func TestWantsMsgpack(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                      false,
		"*/*":                   false,
		"application/json":      false,
		"application/msgpack":   true,
		"Application/MsgPack":   true,
		"application/x-msgpack": true,
		"application/json;q=0.9, application/msgpack": true,
		"application/msgpack;q=1":                     true,
		"application/msgpackx":                        false,
		// q-values and order (RFC 9110 12.5.1): q=0 is not acceptable;
		// the higher q wins; at equal q the type listed first wins, and a
		// wildcard that covers both, or no Accept at all, gets JSON.
		"application/msgpack;q=0":                           false,
		"application/msgpack; Q=0.0":                        false,
		"application/msgpack;q=0, application/json;q=0.1":   false,
		"application/json, application/msgpack":             false,
		"application/msgpack, application/json":             true,
		"application/json;q=0.5, application/msgpack;q=0.5": false,
		"application/msgpack;q=0.5, application/json;q=0.5": true,
		"application/msgpack;q=0.5, application/json;q=0.8": false,
		"application/msgpack;q=0.8, application/json;q=0.5": true,
		"application/msgpack;q=0.5, */*;q=0.1":              true,
		"application/*;q=0.5, application/msgpack":          true,
		"application/msgpack;q=0.5, application/*":          false,
		"application/*": false,
		"application/msgpack, application/json;q=0":                       true,
		"application/json;q=0, application/msgpack;q=0.001":               true,
		"application/x-msgpack;q=0, application/msgpack":                  true,
		"application/msgpack;q=0, application/x-msgpack;q=0":              false,
		"application/msgpack;q=bad":                                       false,
		"application/msgpack;charset=utf-8;q=0.9, application/json;q=0.8": true,
		" application/msgpack ; q=1.000 ":                                 true,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		if got := wantsMsgpack(r); got != want {
			t.Errorf("Accept %q: msgpack %v, want %v", accept, got, want)
		}
	}
}

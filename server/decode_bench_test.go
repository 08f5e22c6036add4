package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// BenchmarkDecodeJSON decodes a shared-table put's body as the handler
// does, strict checks included; "lax" is encoding/json alone, the
// baseline.
func BenchmarkDecodeJSON(b *testing.B) {
	body := []byte(`{"timestamp":"2026-11-23T18:00:00Z","attributes":{"user":"u-123456","score":42,"tags":["a","b"]},"ttl":"1h"}`)
	type put struct {
		Timestamp  *string         `json:"timestamp"`
		Attributes json.RawMessage `json:"attributes"`
		TTL        *string         `json:"ttl"`
	}
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := httptest.NewRequest("PUT", "/", bytes.NewReader(body))
			var v put
			if err := DecodeJSON(r, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lax", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := httptest.NewRequest("PUT", "/", bytes.NewReader(body))
			var v put
			if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

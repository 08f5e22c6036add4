//go:build unix

package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHandlerAnswersAsEbb checks that the stand-in answers what
// ingest-latency checks and reads: an event write 200 with the events
// counted, an index's creation 200, and /metrics with the CPU seconds.
func TestHandlerAnswersAsEbb(t *testing.T) {
	h := handler(calibrate(50 * time.Microsecond))
	post := func(method, path, body string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	if code, body := post("PUT", "/v1/indexes/ingest", `{"retention":"168h"}`); code != 200 || body != "{}\n" {
		t.Fatalf("create index: %d %q", code, body)
	}
	events := `{"events":[{"index_id":"a","event_id":"1"},{"index_id":"a","event_id":"2"},{"index_id":"b","event_id":"3"}]}`
	if code, body := post("POST", "/v1/indexes/ingest/events", events); code != 200 || body != "{\"written\":3}\n" {
		t.Fatalf("event write: %d %q", code, body)
	}
	code, body := post("GET", "/metrics", "")
	if code != 200 || !strings.Contains(body, "process_cpu_seconds_total ") || !strings.Contains(body, "go_gc_duration_seconds_count ") {
		t.Fatalf("metrics: %d %q", code, body)
	}
}

// TestCalibrate checks that the work grows with the time asked for.
func TestCalibrate(t *testing.T) {
	if n := calibrate(0); n != 0 {
		t.Errorf("calibrate(0) = %d rounds, want 0", n)
	}
	short, long := calibrate(100*time.Microsecond), calibrate(time.Millisecond)
	if short <= 0 || long < 5*short {
		t.Errorf("calibrate: %d rounds for 100µs, %d for 1ms; want both positive, the second about ten times the first", short, long)
	}
}

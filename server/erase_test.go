package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

type eraseBody struct {
	Removed *int64 `json:"removed"`
	Shards  *int   `json:"shards"`
}

// eraseEvents sends DELETE /v1/indexes/ev/events with v and decodes a 200.
func eraseEvents(t *testing.T, base string, v url.Values) (removed int64, shards int) {
	t.Helper()
	var b eraseBody
	decode(t, send(t, "DELETE", base+"/v1/indexes/ev/events?"+v.Encode(), ""), http.StatusOK, &b)
	if b.Removed == nil || b.Shards == nil {
		t.Fatal("erase answer lacks removed or shards")
	}
	return *b.Removed, *b.Shards
}

func countEvents(t *testing.T, base, id string) int {
	t.Helper()
	var page eventsPage
	decode(t, send(t, "GET", base+"/v1/indexes/ev/events?"+url.Values{"index_id": {id}, "limit": {"10000"}}.Encode(), ""), http.StatusOK, &page)
	return len(page.Events)
}

// TestEraseEndpoint erases a range, one event, and all of an index_id
// through the API (on both listeners: the package's tests run on the hot
// one too), and refuses bad queries before deleting anything.
func TestEraseEndpoint(t *testing.T) {
	base, _, _ := indexServer(t)
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	var sent []eventBody
	for i := range 30 {
		ts := now.Add(-time.Duration(i) * 7 * time.Minute) // spans 4 shards
		for _, id := range []string{"acc/1 é", "acc_2"} {
			sent = append(sent, eventBody{IndexID: id, EventID: fmt.Sprintf("e_%02d", i), Timestamp: ts.Format(time.RFC3339Nano)})
		}
	}
	decode(t, postEvents(t, base, sent), http.StatusOK, nil)

	for _, c := range []struct {
		name, query, code string
		status            int
	}{
		{"no index_id", "", "invalid_argument", 400},
		{"empty index_id", "index_id=", "invalid_argument", 400},
		{"from after to", "index_id=acc_2&from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "invalid_argument", 400},
		{"bad from", "index_id=acc_2&from=yesterday", "invalid_argument", 400},
		{"event_id without timestamp", "index_id=acc_2&event_id=e_01", "invalid_argument", 400},
		{"timestamp without event_id", "index_id=acc_2&timestamp=" + url.QueryEscape(now.Format(time.RFC3339Nano)), "invalid_argument", 400},
		{"empty event_id", "index_id=acc_2&event_id=&timestamp=" + url.QueryEscape(now.Format(time.RFC3339Nano)), "invalid_argument", 400},
		{"one event and a range", "index_id=acc_2&event_id=e_00&timestamp=" + url.QueryEscape(now.Format(time.RFC3339Nano)) + "&from=2026-01-01T00:00:00Z", "invalid_argument", 400},
		{"unknown parameter", "index_id=acc_2&limit=3", "invalid_argument", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, send(t, "DELETE", base+"/v1/indexes/ev/events?"+c.query, ""), c.status, c.code)
		})
	}
	expectError(t, send(t, "DELETE", base+"/v1/indexes/nope/events?index_id=acc_2", ""), 404, "not_found")
	if n := countEvents(t, base, "acc_2"); n != 30 {
		t.Fatalf("a refused erase removed events: %d left of 30", n)
	}

	// A range: [now-1h, now), 9 events of each index_id (0, 7, ..., 56 min ago).
	rng := url.Values{"index_id": {"acc/1 é"}, "from": {now.Add(-time.Hour).Format(time.RFC3339Nano)}, "to": {now.Format(time.RFC3339Nano)}}
	if removed, shards := eraseEvents(t, base, rng); removed != 8 || shards < 1 || shards > 2 {
		t.Fatalf("range erase: removed %d from %d shards, want 8 from 1 or 2", removed, shards)
	}
	if removed, _ := eraseEvents(t, base, rng); removed != 0 {
		t.Fatalf("second range erase removed %d", removed)
	}
	if n := countEvents(t, base, "acc/1 é"); n != 22 {
		t.Fatalf("%d events left after the range erase, want 22", n)
	}

	// One event.
	one := url.Values{"index_id": {"acc_2"}, "event_id": {"e_03"}, "timestamp": {now.Add(-21 * time.Minute).Format(time.RFC3339Nano)}}
	if removed, shards := eraseEvents(t, base, one); removed != 1 || shards != 1 {
		t.Fatalf("erase one: removed %d from %d shards", removed, shards)
	}
	if removed, _ := eraseEvents(t, base, one); removed != 0 {
		t.Fatalf("second erase of one removed %d", removed)
	}

	// Everything of one index_id; the other keeps its own.
	if removed, shards := eraseEvents(t, base, url.Values{"index_id": {"acc/1 é"}}); removed != 22 || shards != 27 {
		t.Fatalf("erase all: removed %d from %d shards, want 22 from 27", removed, shards)
	}
	if n := countEvents(t, base, "acc/1 é"); n != 0 {
		t.Fatalf("%d events left after erasing all", n)
	}
	if n := countEvents(t, base, "acc_2"); n != 29 {
		t.Fatalf("acc_2 holds %d events, want 29", n)
	}
}

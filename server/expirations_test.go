package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
)

const expirationsAuth = `
tokens:
  - token: admin-token
    scopes: ["admin"]
  - token: user-token
    scopes: ["list:user"]
  - token: staff-reader
    scopes: ["read:list:staff"]
  - token: sessions-token
    scopes: ["table:sessions"]
  - token: index-token
    scopes: ["index:events"]
`

type expirationsPage struct {
	Expirations []ebb.Expiration `json:"expirations"`
	Next        string           `json:"next"`
}

// expiringDB opens a DB whose sweeper runs every 50 ms, holding list items
// of entity types user (5) and staff (5) and one shared-table item, all
// expiring within a second.
func expiringDB(t *testing.T) *ebb.DB {
	t.Helper()
	ctx := t.Context()
	db, err := ebb.Open(ctx, ebb.Options{Store: testbackend.Pebble(t, nil), SweepInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, et := range []string{"user", "staff"} {
		addExpiringItems(t, db, et, 5)
	}
	if _, _, err := db.Tables().CreateTable(ctx, "sessions", multitable.Config{Expiry: store.ExpirySweep}); err != nil {
		t.Fatal(err)
	}
	ttl := time.Second
	if _, err := db.Tables().Put(ctx, "sessions", multitable.PutItem{Key: "s1", Timestamp: time.Now(), TTL: &ttl}); err != nil {
		t.Fatal(err)
	}
	return db
}

// addExpiringItems adds n items, expiring within a second, to the list
// feature "seen" of entityType.
func addExpiringItems(t *testing.T, db *ebb.DB, entityType string, n int) {
	t.Helper()
	id := lists.FeatureID{EntityType: entityType, Feature: "seen"}
	if _, _, err := db.Lists().CreateFeatureWith(t.Context(), id, lists.FeatureConfig{TTL: time.Second, Expiry: store.ExpirySweep}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		item := lists.Item{Value: []byte("v"), Timestamp: time.Now().Add(-800 * time.Millisecond)}
		if _, err := db.Lists().Add(t.Context(), id, fmt.Sprintf("e%d-%d", time.Now().UnixNano(), i), []lists.Item{item}); err != nil {
			t.Fatal(err)
		}
	}
}

// pollExpirations long-polls GET /v1/expirations with token until it has
// read want events or a deadline passes.
func pollExpirations(t *testing.T, url, token, after string, want int) ([]ebb.Expiration, string) {
	t.Helper()
	var got []ebb.Expiration
	for deadline := time.Now().Add(30 * time.Second); len(got) < want && time.Now().Before(deadline); {
		r := call(t, "GET", url+"/v1/expirations?timeout=1s&after="+after, token, nil)
		var p expirationsPage
		if r.status != 200 || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("expirations: %d %s", r.status, r.body)
		}
		got = append(got, p.Expirations...)
		after = p.Next
	}
	return got, after
}

// TestExpirationsScopedByToken checks that each token sees the
// expirations of what it may read, and never another's.
func TestExpirationsScopedByToken(t *testing.T) {
	db := expiringDB(t)
	ts, _ := start(t, server.Options{DB: db, Auth: loadAuth(t, expirationsAuth)})
	all, end := pollExpirations(t, ts.URL, "admin-token", "", 11)
	if len(all) != 11 {
		t.Fatalf("admin sees %d expirations, want 11", len(all))
	}
	for _, c := range []struct {
		token, kind, name string
		want              int
	}{
		{"user-token", "list", "user", 5},
		{"staff-reader", "list", "staff", 5},
		{"sessions-token", "table", "sessions", 1},
		{"index-token", "index", "events", 0},
	} {
		r := call(t, "GET", ts.URL+"/v1/expirations?limit=100", c.token, nil)
		var p expirationsPage
		if r.status != 200 || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("%s: %d %s", c.token, r.status, r.body)
		}
		if len(p.Expirations) != c.want {
			t.Errorf("%s sees %d expirations, want %d", c.token, len(p.Expirations), c.want)
		}
		for _, ev := range p.Expirations {
			if ev.Kind != c.kind || ev.Name != c.name {
				t.Errorf("%s sees an expiration of %s %s", c.token, ev.Kind, ev.Name)
			}
		}
		if p.Next != end {
			t.Errorf("%s's cursor stops at %s, want %s past what it may not see", c.token, p.Next, end)
		}
	}
	if r := call(t, "GET", ts.URL+"/v1/expirations", "", nil); r.status != 401 {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", ts.URL+"/v1/expirations?after=bogus", "admin-token", nil); r.status != 400 {
		t.Fatalf("malformed cursor: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", ts.URL+"/v1/expirations?timeout=1h", "admin-token", nil); r.status != 400 {
		t.Fatalf("timeout past the bound: %d %s", r.status, r.body)
	}
}

// TestExpirationsLongPollWakes checks that a long poll waiting at the end
// of the log answers soon after a row expires, long before its timeout.
func TestExpirationsLongPollWakes(t *testing.T) {
	db := expiringDB(t)
	ts, _ := start(t, server.Options{DB: db})
	_, end := pollExpirations(t, ts.URL, "", "", 11)
	done := make(chan response, 1)
	start := time.Now()
	go func() { done <- call(t, "GET", ts.URL+"/v1/expirations?timeout=60s&after="+end, "", nil) }()
	time.Sleep(100 * time.Millisecond)
	addExpiringItems(t, db, "user", 1)
	r := <-done
	var p expirationsPage
	if r.status != 200 || json.Unmarshal(r.body, &p) != nil || len(p.Expirations) != 1 {
		t.Fatalf("long poll: %d %s", r.status, r.body)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("long poll answered after %s: it did not wake", took)
	}
}

// sseEvent is one event of a text/event-stream body.
type sseEvent struct{ id, event, data string }

// parseSSE splits an event stream into its events and the last id it
// set (id-only blocks included).
func parseSSE(t *testing.T, body []byte) (events []sseEvent, lastID string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				events = append(events, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
			lastID = cur.id
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected event-stream line %q", line)
		}
	}
	return events, lastID
}

// TestExpirationsEventStream reads the log as Server-Sent Events with a
// scoped token: each event is an expiration the token may read, its id
// the expiration's cursor, and a stream resumed with Last-Event-ID starts
// after it.
func TestExpirationsEventStream(t *testing.T) {
	db := expiringDB(t)
	ts, _ := start(t, server.Options{DB: db, Auth: loadAuth(t, expirationsAuth)})
	pollExpirations(t, ts.URL, "admin-token", "", 11) // all are logged
	r := call(t, "GET", ts.URL+"/v1/expirations?timeout=2s", "user-token", nil, "Accept: text/event-stream")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("event stream: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	events, _ := parseSSE(t, r.body)
	if len(events) != 5 {
		t.Fatalf("%d events, want 5:\n%s", len(events), r.body)
	}
	for _, e := range events {
		var ev ebb.Expiration
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil || e.event != "expiration" || ev.Cursor != e.id || ev.Name != "user" {
			t.Fatalf("event %+v: %v", e, err)
		}
	}
	r = call(t, "GET", ts.URL+"/v1/expirations?timeout=2s", "user-token", nil, "Accept: text/event-stream", "Last-Event-ID: "+events[2].id)
	rest, _ := parseSSE(t, r.body)
	if len(rest) != 2 || rest[0].id != events[3].id || rest[1].id != events[4].id {
		t.Fatalf("resumed after the third event: %+v, want the last two", rest)
	}
}

// TestExpirationsEndAtShutdown checks that a shutdown does not wait for
// the waiting readers of the log: a long poll answers at once with the
// cursor it was given, and an event stream ends.
func TestExpirationsEndAtShutdown(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: testbackend.Pebble(t, nil), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	srv, _ := newServer(t, server.Options{DB: db})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- srv.ListenAndServe(ctx, "127.0.0.1:0", 30*time.Second, func(u string) { ready <- u })
	}()
	url := <-ready
	first, err := db.Expirations(t.Context(), ebb.ExpirationsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	poll := make(chan response, 1)
	stream := make(chan response, 1)
	go func() { poll <- call(t, "GET", url+"/v1/expirations?timeout=5m&after="+first.Next, "", nil) }()
	go func() { stream <- call(t, "GET", url+"/v1/expirations", "", nil, "Accept: text/event-stream") }()
	time.Sleep(300 * time.Millisecond) // both are waiting
	start := time.Now()
	cancel()
	r := <-poll
	var p expirationsPage
	if r.status != 200 || json.Unmarshal(r.body, &p) != nil || len(p.Expirations) != 0 || p.Next != first.Next {
		t.Fatalf("long poll at shutdown: %d %s", r.status, r.body)
	}
	if r := <-stream; r.status != 200 {
		t.Fatalf("event stream at shutdown: %d %s", r.status, r.body)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("shutdown took %s with readers waiting", took)
	}
}

package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// indexServer serves the index API over a fresh Pebble store.
func indexServer(t *testing.T) (string, store.Store, *prometheus.Registry) {
	t.Helper()
	st := testbackend.Pebble(t, nil)
	reg := prometheus.NewRegistry()
	svc, err := timeseries.New(context.Background(), st, timeseries.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, nil), Registerer: reg, Features: []server.Feature{server.Indexes(svc)}})
	return ts.URL, st, reg
}

func send(t *testing.T, method, url, body string) response {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	if rd == nil {
		return call(t, method, url, "", nil)
	}
	return call(t, method, url, "", rd)
}

func expectError(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if got := r.errorCode(t); got != code {
		t.Fatalf("code %q, want %q; body %s", got, code, r.body)
	}
}

func decode(t *testing.T, r response, want int, v any) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d; body %s", r.status, want, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
	}
}

type indexBody struct {
	Name            string `json:"name"`
	TableBucket     string `json:"table_bucket"`
	PartitionBucket string `json:"partition_bucket"`
	Retention       string `json:"retention"`
	HeldRetention   string `json:"held_retention"`
	Runway          int    `json:"runway"`
	Shards          []struct {
		Table, Start, End, State, Capacity string
	} `json:"shards"`
	RunwayRemaining string `json:"runway_remaining"`
}

const hourlyIndex = `{"table_bucket":"1h","partition_bucket":"10m","retention":"24h"}`

func TestIndexLifecycle(t *testing.T) {
	base, _, _ := indexServer(t)
	var idx indexBody
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, &idx)
	if idx.Name != "ev" || idx.TableBucket != "1h" || idx.PartitionBucket != "10m" || idx.Retention != "24h" || idx.Runway != 2 {
		t.Errorf("index %+v", idx)
	}
	// 24 past shards (the oldest partly inside retention), the hot one, 2 ahead.
	if len(idx.Shards) != 27 {
		t.Fatalf("%d shards, want 27", len(idx.Shards))
	}
	hot := 0
	for i, sh := range idx.Shards {
		if sh.State == "hot" {
			hot++
			if i != 24 {
				t.Errorf("hot shard at %d", i)
			}
		}
		if sh.Capacity != "on_demand" || !strings.HasPrefix(sh.Table, "ev_") {
			t.Errorf("shard %+v", sh)
		}
	}
	if hot != 1 {
		t.Errorf("%d hot shards", hot)
	}
	if d, err := time.ParseDuration(idx.RunwayRemaining); err != nil || d <= 2*time.Hour || d > 3*time.Hour {
		t.Errorf("runway_remaining %q", idx.RunwayRemaining)
	}

	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusOK, nil)
	expectError(t, send(t, "PUT", base+"/v1/indexes/ev", `{"table_bucket":"90m","partition_bucket":"10m","retention":"24h"}`), 400, "invalid_argument")
	var changed indexBody
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", `{"table_bucket":"1h","partition_bucket":"10m","retention":"12h"}`), http.StatusOK, &changed)
	if changed.Retention != "12h" || changed.HeldRetention != "24h" {
		t.Fatalf("a shorter retention: retention %q, held %q; want 12h held at 24h", changed.Retention, changed.HeldRetention)
	}
	changed = indexBody{}
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusOK, &changed)
	if changed.Retention != "24h" || changed.HeldRetention != "" {
		t.Fatalf("back to 24h: retention %q, held %q", changed.Retention, changed.HeldRetention)
	}
	decode(t, send(t, "PUT", base+"/v1/indexes/ev_b", `{"table_bucket":"168h","partition_bucket":"24h","retention":"1008h","runway":3}`), http.StatusCreated, nil)

	var list struct{ Indexes []indexBody }
	decode(t, send(t, "GET", base+"/v1/indexes", ""), http.StatusOK, &list)
	if len(list.Indexes) != 2 || list.Indexes[0].Name != "ev" || list.Indexes[1].Name != "ev_b" || list.Indexes[1].Runway != 3 {
		t.Fatalf("list %+v", list)
	}
	decode(t, send(t, "GET", base+"/v1/indexes/ev", ""), http.StatusOK, &idx)
	if len(idx.Shards) != 27 {
		t.Fatalf("ev shows %d shards beside ev_b, want 27", len(idx.Shards))
	}

	if r := send(t, "DELETE", base+"/v1/indexes/ev", ""); r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	expectError(t, send(t, "GET", base+"/v1/indexes/ev", ""), 404, "not_found")
	decode(t, send(t, "DELETE", base+"/v1/indexes/ev", ""), http.StatusNoContent, nil) // a missing index: as deleted
	decode(t, send(t, "GET", base+"/v1/indexes/ev_b", ""), http.StatusOK, &idx)
	if len(idx.Shards) != 6+1+3 {
		t.Errorf("ev_b has %d shards after deleting ev", len(idx.Shards))
	}
}

func TestCreateIndexBadInput(t *testing.T) {
	base, st, _ := indexServer(t)
	for name, c := range map[string]struct{ path, body string }{
		"upper-case name":   {"Ev", hourlyIndex},
		"dash in name":      {"e-v", hourlyIndex},
		"name too long":     {strings.Repeat("a", 32), hourlyIndex},
		"name starts digit": {"1ev", hourlyIndex},
		"bad duration":      {"ev", `{"table_bucket":"7d","partition_bucket":"1h","retention":"24h"}`},
		"negative":          {"ev", `{"table_bucket":"-1h","partition_bucket":"1h","retention":"24h"}`},
		"not a multiple":    {"ev", `{"table_bucket":"1h","partition_bucket":"7m","retention":"24h"}`},
		"fractional table":  {"ev", `{"table_bucket":"1.5s","partition_bucket":"500ms","retention":"24h"}`},
		"zero retention":    {"ev", `{"table_bucket":"1h","partition_bucket":"1h","retention":"0s"}`},
		"missing bucket":    {"ev", `{"partition_bucket":"1h","retention":"24h"}`},
		"runway 0":          {"ev", `{"table_bucket":"1h","partition_bucket":"1h","retention":"24h","runway":0}`},
		"runway string":     {"ev", `{"table_bucket":"1h","partition_bucket":"1h","retention":"24h","runway":"2"}`},
		"unknown field":     {"ev", `{"table_bucket":"1h","partition_bucket":"1h","retention":"24h","ttl":"1h"}`},
		"malformed":         {"ev", `{"table_bucket":`},
		"empty body":        {"ev", ``},
		"too many shards":   {"ev", `{"table_bucket":"1s","partition_bucket":"1s","retention":"24h"}`},
	} {
		t.Run(name, func(t *testing.T) {
			expectError(t, send(t, "PUT", base+"/v1/indexes/"+c.path, c.body), 400, "invalid_argument")
		})
	}
	infos, err := st.Tables(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if !strings.HasPrefix(info.Spec.Name, "ebb_") {
			t.Errorf("bad requests created table %s", info.Spec.Name)
		}
	}
}

type eventBody struct {
	IndexID   string `json:"index_id"`
	EventID   string `json:"event_id"`
	Timestamp string `json:"timestamp"`
	Payload   []byte `json:"payload"`
	TTL       string `json:"ttl,omitempty"`
}

type eventsPage struct {
	Events        []eventBody `json:"events"`
	NextPageToken *string     `json:"next_page_token"`
}

func postEvents(t *testing.T, base string, events []eventBody) response {
	t.Helper()
	b, err := json.Marshal(map[string]any{"events": events})
	if err != nil {
		t.Fatal(err)
	}
	return send(t, "POST", base+"/v1/indexes/ev/events", string(b))
}

func TestEventsRoundTripAndPaging(t *testing.T) {
	base, _, _ := indexServer(t)
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Ids with the characters encodings trip on.
	ids := []string{"acc_1#a/b\x00", "acc_1#a/b", "é/%2F?&="}
	var sent []eventBody
	for i := range 30 {
		ts := now.Add(-time.Duration(i) * 7 * time.Minute) // spans 4 shards
		sent = append(sent, eventBody{IndexID: ids[i%3], EventID: fmt.Sprintf("e_%02d#/\x00x", i), Timestamp: ts.Format(time.RFC3339Nano), Payload: []byte{byte(i), 0, 255}})
	}
	var written struct{ Written int }
	decode(t, postEvents(t, base, sent), http.StatusOK, &written)
	if written.Written != 30 {
		t.Fatalf("written %d", written.Written)
	}
	for _, id := range ids {
		for _, order := range []string{"asc", "desc"} {
			for _, limit := range []int{1, 3, 100} {
				var got []eventBody
				token := ""
				for pages := 0; ; pages++ {
					v := url.Values{"index_id": {id}, "from": {now.Add(-5 * time.Hour).Format(time.RFC3339)},
						"to": {now.Add(time.Millisecond).Format(time.RFC3339Nano)}, "order": {order}, "limit": {fmt.Sprint(limit)}}
					if token != "" {
						v.Set("page_token", token)
					}
					var page eventsPage
					decode(t, send(t, "GET", base+"/v1/indexes/ev/events?"+v.Encode(), ""), http.StatusOK, &page)
					if len(page.Events) > limit {
						t.Fatalf("page of %d, limit %d", len(page.Events), limit)
					}
					got = append(got, page.Events...)
					if page.NextPageToken == nil || *page.NextPageToken == "" {
						break
					}
					token = *page.NextPageToken
				}
				var want []eventBody
				for _, e := range sent {
					if e.IndexID == id {
						want = append(want, e)
					}
				}
				if order == "asc" {
					for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
						want[i], want[j] = want[j], want[i]
					}
				}
				if len(got) != len(want) {
					t.Fatalf("%q %s limit %d: %d events, want %d", id, order, limit, len(got), len(want))
				}
				for i := range got {
					g, w := got[i], want[i]
					gt, _ := time.Parse(time.RFC3339Nano, g.Timestamp)
					wt, _ := time.Parse(time.RFC3339Nano, w.Timestamp)
					if g.IndexID != w.IndexID || g.EventID != w.EventID || !gt.Equal(wt) || string(g.Payload) != string(w.Payload) {
						t.Fatalf("%q %s limit %d: event %d = %+v, want %+v", id, order, limit, i, g, w)
					}
				}
			}
		}
	}
	r := send(t, "GET", base+"/metrics", "")
	// ebb_reconcile_last_success_timestamp_seconds is set by the loop,
	// which this server does not run.
	for _, name := range []string{"ebb_index_events_written_total", "ebb_shard_runway_seconds", "ebb_reconcile_actions_total",
		"ebb_reconcile_failures_total"} {
		if !strings.Contains(string(r.body), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

func TestEventsBadInput(t *testing.T) {
	base, _, _ := indexServer(t)
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
	now := time.Now().UTC()
	ok := eventBody{IndexID: "a", EventID: "e", Timestamp: now.Format(time.RFC3339Nano)}
	ev := func(mut func(*eventBody)) []eventBody {
		bad := ok
		mut(&bad)
		return []eventBody{ok, bad}
	}
	for name, c := range map[string]struct {
		events []eventBody
		status int
		code   string
	}{
		"empty index_id":     {ev(func(e *eventBody) { e.IndexID = "" }), 400, "invalid_argument"},
		"long event_id":      {ev(func(e *eventBody) { e.EventID = strings.Repeat("x", 257) }), 400, "invalid_argument"},
		"bad timestamp":      {ev(func(e *eventBody) { e.Timestamp = "yesterday" }), 400, "invalid_argument"},
		"expired":            {ev(func(e *eventBody) { e.Timestamp = now.Add(-25 * time.Hour).Format(time.RFC3339) }), 422, "expired"},
		"no shard":           {ev(func(e *eventBody) { e.Timestamp = now.Add(30 * 24 * time.Hour).Format(time.RFC3339) }), 422, "no_shard"},
		"zero ttl":           {ev(func(e *eventBody) { e.TTL = "0s" }), 400, "invalid_argument"},
		"negative ttl":       {ev(func(e *eventBody) { e.TTL = "-1h" }), 400, "invalid_argument"},
		"ttl not a duration": {ev(func(e *eventBody) { e.TTL = "soon" }), 400, "invalid_argument"},
		"ttl = retention":    {ev(func(e *eventBody) { e.TTL = "24h" }), 400, "invalid_argument"},
		"ttl > retention":    {ev(func(e *eventBody) { e.TTL = "720h" }), 400, "invalid_argument"},
		"ttl expired": {ev(func(e *eventBody) {
			e.Timestamp, e.TTL = now.Add(-2*time.Hour).Format(time.RFC3339), "1h"
		}), 422, "expired"},
	} {
		t.Run(name, func(t *testing.T) {
			r := postEvents(t, base, c.events)
			expectError(t, r, c.status, c.code)
			if !strings.Contains(string(r.body), "event 1") {
				t.Errorf("message does not name event 1: %s", r.body)
			}
		})
	}
	for name, body := range map[string]string{
		"bad base64":    `{"events":[{"index_id":"a","event_id":"e","timestamp":"` + ok.Timestamp + `","payload":"%%%"}]}`,
		"unknown field": `{"events":[{"index_id":"a","event_id":"e","timestamp":"` + ok.Timestamp + `","expires":"1h"}]}`,
		"ttl a number":  `{"events":[{"index_id":"a","event_id":"e","timestamp":"` + ok.Timestamp + `","ttl":3600}]}`,
		"no events":     `{}`,
		"malformed":     `{"events":[`,
		"missing ts":    `{"events":[{"index_id":"a","event_id":"e"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			expectError(t, send(t, "POST", base+"/v1/indexes/ev/events", body), 400, "invalid_argument")
		})
	}
	many := make([]eventBody, timeseries.MaxBatch+1)
	for i := range many {
		many[i] = ok
	}
	expectError(t, postEvents(t, base, many), 413, "too_large")
	expectError(t, send(t, "POST", base+"/v1/indexes/nope/events", `{"events":[]}`), 404, "not_found")
	expectError(t, send(t, "POST", base+"/v1/indexes/No/events", `{"events":[]}`), 400, "invalid_argument")

	// None of the refused batches wrote anything.
	var page eventsPage
	decode(t, send(t, "GET", base+"/v1/indexes/ev/events?index_id=a", ""), http.StatusOK, &page)
	if len(page.Events) != 0 {
		t.Fatalf("refused batches wrote %d events", len(page.Events))
	}

	decode(t, postEvents(t, base, []eventBody{ok, {IndexID: "a", EventID: "f", Timestamp: ok.Timestamp, TTL: "1h"}}), http.StatusOK, nil)
	decode(t, send(t, "GET", base+"/v1/indexes/ev/events?index_id=a&limit=1", ""), http.StatusOK, &page)
	if page.NextPageToken == nil {
		t.Fatal("no next_page_token with more events")
	}
	tok, _ := base64.RawURLEncoding.DecodeString(*page.NextPageToken)
	tok[5] ^= 0x40
	from := url.QueryEscape(now.Format(time.RFC3339))
	for name, q := range map[string]string{
		"limit 0":        "index_id=a&limit=0",
		"limit 10001":    "index_id=a&limit=10001",
		"limit abc":      "index_id=a&limit=abc",
		"from == to":     "index_id=a&from=" + from + "&to=" + from,
		"from > to":      "index_id=a&from=" + from + "&to=2020-01-01T00:00:00Z",
		"bad from":       "index_id=a&from=yesterday",
		"bad to":         "index_id=a&to=2026-13-01T00:00:00Z",
		"bad order":      "index_id=a&order=up",
		"no index_id":    "limit=5",
		"garbage token":  "index_id=a&page_token=!!!",
		"bad escape":     "index_id=a&page_token=%%%",
		"tampered token": "index_id=a&page_token=" + base64.RawURLEncoding.EncodeToString(tok),
		"desc token":     "index_id=a&order=desc&page_token=" + *page.NextPageToken,
	} {
		t.Run(name, func(t *testing.T) {
			expectError(t, send(t, "GET", base+"/v1/indexes/ev/events?"+q, ""), 400, "invalid_argument")
		})
	}
}

func TestReconcileEndpoint(t *testing.T) {
	base, st, _ := indexServer(t)
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
	type plan struct {
		Actions []struct{ Op, Table, Reason, Error string }
		Applied bool
	}
	var p plan
	decode(t, send(t, "POST", base+"/v1/indexes/ev/reconcile?dry_run=true", ""), http.StatusOK, &p)
	if len(p.Actions) != 0 {
		t.Fatalf("fresh index plans %+v", p.Actions)
	}
	// Lose a runway shard; the plan puts it back, dry runs change nothing.
	var idx indexBody
	decode(t, send(t, "GET", base+"/v1/indexes/ev", ""), http.StatusOK, &idx)
	lost := idx.Shards[len(idx.Shards)-1].Table
	if err := st.DropTable(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		decode(t, send(t, "POST", base+"/v1/indexes/ev/reconcile?dry_run=true", ""), http.StatusOK, &p)
		if len(p.Actions) != 1 || p.Actions[0].Op != "create" || p.Actions[0].Table != lost || p.Actions[0].Reason == "" || p.Applied {
			t.Fatalf("plan %+v", p)
		}
	}
	decode(t, send(t, "POST", base+"/v1/indexes/ev/reconcile?dry_run=false", ""), http.StatusOK, &p)
	if len(p.Actions) != 1 || p.Actions[0].Error != "" || !p.Applied {
		t.Fatalf("apply %+v", p)
	}
	decode(t, send(t, "POST", base+"/v1/indexes/ev/reconcile", ""), http.StatusOK, &p)
	if len(p.Actions) != 0 || p.Applied {
		t.Fatalf("after apply %+v (a bare POST must only plan)", p)
	}
	expectError(t, send(t, "POST", base+"/v1/indexes/ev/reconcile?dry_run=maybe", ""), 400, "invalid_argument")
	expectError(t, send(t, "POST", base+"/v1/indexes/nope/reconcile", ""), 404, "not_found")
}

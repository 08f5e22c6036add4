package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// TestIndexLayoutChange changes an index's buckets over HTTP: 200 with
// the layouts, the transition in the plan, events written on both sides
// of the boundary read back in order across it, page by page, and a
// change that cannot be made answers 400.
func TestIndexLayoutChange(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	clk := storetest.NewClock(t0)
	st := testbackend.Pebble(t, clk.Now)
	svc, err := timeseries.New(context.Background(), st, timeseries.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, clk.Now), Features: []server.Feature{server.Indexes(svc)}})
	base := ts.URL

	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
	var idx struct {
		TableBucket string `json:"table_bucket"`
		Layouts     []struct {
			From            string `json:"from"`
			TableBucket     string `json:"table_bucket"`
			PartitionBucket string `json:"partition_bucket"`
		} `json:"layouts"`
	}
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", `{"table_bucket":"2h","partition_bucket":"30m","retention":"24h"}`), http.StatusOK, &idx)
	if idx.TableBucket != "2h" || len(idx.Layouts) != 2 || idx.Layouts[0].TableBucket != "1h" || idx.Layouts[0].From != "1970-01-01T00:00:00Z" ||
		idx.Layouts[1].From != "2026-03-04T16:00:00Z" || idx.Layouts[1].TableBucket != "2h" || idx.Layouts[1].PartitionBucket != "30m" {
		t.Fatalf("after the change: %+v", idx)
	}
	expectError(t, send(t, "PUT", base+"/v1/indexes/ev", `{"table_bucket":"90m","partition_bucket":"30m","retention":"24h"}`), http.StatusBadRequest, "invalid_argument")

	var plan struct {
		Actions []struct {
			Op, Table, Reason string
		} `json:"actions"`
		Transitions []struct {
			From    string `json:"from"`
			Table   string `json:"table"`
			Change  string `json:"change"`
			Created bool   `json:"created"`
		} `json:"transitions"`
	}
	decode(t, send(t, "POST", base+"/v1/indexes/ev/reconcile", ""), http.StatusOK, &plan)
	if len(plan.Transitions) != 1 || plan.Transitions[0].From != "2026-03-04T16:00:00Z" || plan.Transitions[0].Created ||
		plan.Transitions[0].Change != "layout change: table_bucket 1h -> 2h, partition_bucket 10m -> 30m" {
		t.Fatalf("plan transitions %+v", plan.Transitions)
	}

	// At 14:00 the runway reaches the boundary; an apply creates the
	// first shard of the new layout, saying why.
	clk.Set(t0.Add(2 * time.Hour))
	decode(t, send(t, "POST", base+"/v1/indexes/ev/reconcile?dry_run=false", ""), http.StatusOK, &plan)
	found := false
	for _, a := range plan.Actions {
		found = found || (a.Op == "create" && a.Table == "ev_1772640000" && strings.Contains(a.Reason, "first shard of the new layout"))
	}
	if !found || !plan.Transitions[0].Created {
		t.Fatalf("apply at 14:00: %+v", plan)
	}

	var events []string
	for i := range 24 {
		ts := t0.Add(2*time.Hour + time.Duration(i)*10*time.Minute) // 14:00 to 17:50
		events = append(events, fmt.Sprintf(`{"index_id":"acc","event_id":"e%02d","timestamp":%q}`, i, ts.Format(time.RFC3339)))
	}
	decode(t, send(t, "POST", base+"/v1/indexes/ev/events", `{"events":[`+strings.Join(events, ",")+`]}`), http.StatusOK, nil)
	for _, order := range []string{"asc", "desc"} {
		var got []string
		token := ""
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatal("paging does not end")
			}
			q := url.Values{"index_id": {"acc"}, "limit": {"5"}, "order": {order}}
			if token != "" {
				q.Set("page_token", token)
			}
			var page struct {
				Events []struct {
					EventID string `json:"event_id"`
				} `json:"events"`
				NextPageToken string `json:"next_page_token"`
			}
			decode(t, send(t, "GET", base+"/v1/indexes/ev/events?"+q.Encode(), ""), http.StatusOK, &page)
			for _, e := range page.Events {
				got = append(got, e.EventID)
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		if len(got) != 24 {
			t.Fatalf("%s: %d events, want 24: %v", order, len(got), got)
		}
		for i, id := range got {
			want := i
			if order == "desc" {
				want = 23 - i
			}
			if id != fmt.Sprintf("e%02d", want) {
				t.Fatalf("%s: event %d is %s: %v", order, i, id, got)
			}
		}
	}
}

package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

func TestHealthReadyMetrics(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	anon := e.client(t, "")
	if err := anon.Health(ctx); err != nil {
		t.Fatalf("health: %v", err)
	}
	// Ready once the shard manager has completed its first pass, which
	// Open starts at once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := anon.Ready(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if _, err := anon.Metrics(ctx); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("metrics without a token: %v", err)
	}
	if _, err := e.client(t, eventsToken).Metrics(ctx); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("metrics with an index token: %v", err)
	}
	text, err := e.client(t, metricsToken).Metrics(ctx)
	if err != nil || !bytes.Contains(text, []byte("ebb_http_requests_total")) {
		t.Fatalf("metrics: %v\n%.300s", err, text)
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()

	// The server's code comes back in an *APIError matching its sentinel.
	_, err := e.client(t, "").Indexes(ctx)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != client.CodeUnauthenticated || !errors.Is(err, client.ErrUnauthenticated) ||
		errors.Is(err, client.ErrNotFound) {
		t.Fatalf("no token: %#v", err)
	}
	if _, err := e.client(t, "wrong").Index(ctx, "events"); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("unknown token: %v", err)
	}
	// A token scoped to one index reaches it, and nothing else.
	narrow := e.client(t, eventsToken)
	if _, err := narrow.Index(ctx, "events"); !errors.Is(err, client.ErrNotFound) || !strings.Contains(err.Error(), "(not_found, HTTP 404)") {
		t.Fatalf("missing index: %v", err)
	}
	for name, call := range map[string]func() error{
		"other index": func() error { _, err := narrow.Index(ctx, "other"); return err },
		"indexes":     func() error { _, err := narrow.Indexes(ctx); return err },
		"admin":       func() error { _, err := narrow.AdminTables(ctx); return err },
		"table":       func() error { _, err := narrow.Table(ctx, "t"); return err },
		"list": func() error {
			_, err := narrow.ListFeature(ctx, client.ListFeatureID{EntityType: "u", Feature: "f"})
			return err
		},
	} {
		if err := call(); !errors.Is(err, client.ErrPermissionDenied) {
			t.Errorf("%s with an index token: %v", name, err)
		}
	}

	root := e.client(t, rootToken)
	// Bad arguments the server refuses, and ones the client refuses
	// before sending (an empty name would make "//" in the path).
	if _, _, err := root.CreateIndex(ctx, "Bad", client.IndexConfig{TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: time.Hour}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("bad index name: %v", err)
	}
	if _, err := root.QueryEvents(ctx, "events", client.EventQuery{IndexID: "a", Limit: 10001}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("limit 10001: %v", err)
	}
	for name, call := range map[string]func() error{
		"index": func() error { _, err := root.Index(ctx, ""); return err },
		"table": func() error { _, err := root.TableItem(ctx, "t", ""); return err },
		"list": func() error {
			_, err := root.ListItems(ctx, client.ListFeatureID{EntityType: "u", Feature: "f"}, "", client.ListQuery{})
			return err
		},
		"feature": func() error { return root.DeleteListFeature(ctx, client.ListFeatureID{EntityType: "u"}) },
		"add items": func() error {
			_, err := root.AddListItems(ctx, client.ListFeatureID{Feature: "f"}, "e", nil)
			return err
		},
	} {
		err := call()
		if !errors.Is(err, client.ErrInvalidArgument) || errors.As(err, &ae) {
			t.Errorf("empty %s name: %v", name, err)
		}
	}

	// A canceled context stops the call.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := root.Health(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.New(client.Config{Server: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Health(t.Context())
	if !errors.Is(err, client.ErrNoServer) || err.Error() != "no server at "+addr+" — start one with `ebb serve`" {
		t.Fatalf("no server: %v", err)
	}

	for _, bad := range []string{"127.0.0.1:7070", "ftp://x", "http://", "http://h/?q=1", "::"} {
		if _, err := client.New(client.Config{Server: bad}); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("server %q: %v", bad, err)
		}
	}
	c, err = client.New(client.Config{})
	if err != nil || c.Server() != client.DefaultServer {
		t.Fatalf("default server: %v %v", c, err)
	}
}

// TestNotEbb checks errors from something in front of the server that
// answers in its own words: the status decides.
func TestNotEbb(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer proxy.Close()
	c, err := client.New(client.Config{Server: proxy.URL + "/prefix/"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Tables(t.Context())
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "" || ae.Message != "bad gateway" || ae.RetryAfter != 7*time.Second ||
		!errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("proxy error: %#v", err)
	}
}

func TestIndexes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, rootToken)

	cfg := client.IndexConfig{TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 3 * time.Hour, Runway: 2}
	idx, created, err := c.CreateIndex(ctx, "events", cfg)
	if err != nil || !created {
		t.Fatalf("create: %v created=%v", err, created)
	}
	if idx.Name != "events" || idx.TableBucket != time.Hour || idx.PartitionBucket != 10*time.Minute || idx.Retention != 3*time.Hour ||
		idx.Runway != 2 || len(idx.Shards) != 6 || idx.RunwayRemaining <= time.Hour || idx.Capacity != nil {
		t.Fatalf("created index %+v", idx)
	}
	if !slices.ContainsFunc(idx.Shards, func(s client.Shard) bool { return s.State == client.ShardHot && s.End.Sub(s.Start) == time.Hour }) {
		t.Errorf("no hot shard of an hour: %+v", idx.Shards)
	}
	if _, created, err := c.CreateIndex(ctx, "events", cfg); err != nil || created {
		t.Fatalf("create again: %v created=%v", err, created)
	}
	// Another table bucket: a layout epoch from a boundary past the
	// runway, which the plan shows; changing back before it took effect
	// cancels it. Table buckets that do not divide one another are
	// refused.
	cfg.TableBucket = 2 * time.Hour
	changed, created, err := c.CreateIndex(ctx, "events", cfg)
	if err != nil || created || len(changed.Layouts) != 2 || changed.Layouts[1].TableBucket != 2*time.Hour ||
		changed.Layouts[1].PartitionBucket != 10*time.Minute || !changed.Layouts[1].From.After(time.Now()) {
		t.Fatalf("create with another table bucket: %+v created=%v %v", changed.Layouts, created, err)
	}
	changePlan, err := c.Reconcile(ctx, "events", client.ReconcileOptions{DryRun: true})
	if err != nil || len(changePlan.Transitions) != 1 || !changePlan.Transitions[0].From.Equal(changed.Layouts[1].From) ||
		changePlan.Transitions[0].Change != "layout change: table_bucket 1h -> 2h, partition_bucket 10m" || changePlan.Transitions[0].Created {
		t.Fatalf("plan after a layout change: %+v %v", changePlan.Transitions, err)
	}
	cfg.TableBucket = 90 * time.Minute
	if _, _, err := c.CreateIndex(ctx, "events", cfg); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("create with a table bucket not dividing the old one: %v", err)
	}
	cfg.TableBucket = time.Hour
	if back, _, err := c.CreateIndex(ctx, "events", cfg); err != nil || back.Layouts != nil {
		t.Fatalf("change back before the change took effect: %+v %v", back.Layouts, err)
	}
	withPolicy := client.IndexConfig{TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: time.Hour,
		Capacity: &client.CapacityPolicy{HotReadUnits: 10, HotWriteUnits: 20}}
	if idx, _, err := c.CreateIndex(ctx, "other", withPolicy); err != nil || idx.Capacity == nil || idx.Capacity.HotWriteUnits != 20 || idx.Runway != 2 {
		t.Fatalf("create with a capacity policy: %+v %v", idx, err)
	}
	if got, err := c.Index(ctx, "events"); err != nil || got.Name != "events" || len(got.Shards) != len(idx.Shards) || got.Shards[0] != idx.Shards[0] {
		t.Fatalf("index: %+v %v", got, err)
	}
	list, err := c.Indexes(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "events" || list[1].Name != "other" {
		t.Fatalf("indexes: %+v %v", list, err)
	}

	// Write: ids with any character travel in the body as they are.
	now := time.Now().UTC().Truncate(time.Millisecond)
	var events []client.Event
	for i := range 25 {
		events = append(events, client.Event{IndexID: "acc/1#.", EventID: fmt.Sprintf("e%02d", i),
			Timestamp: now.Add(-time.Duration(25-i) * time.Minute), Payload: []byte{byte(i), 0}})
	}
	events = append(events, client.Event{IndexID: "acc/1#.", EventID: "no-payload", Timestamp: now.Add(-30 * time.Second)})
	if n, err := c.WriteEvents(ctx, "events", events); err != nil || n != len(events) {
		t.Fatalf("write: %d %v", n, err)
	}
	// The batch is all or nothing, and the message names the event.
	for _, c2 := range []struct {
		ts   time.Time
		want error
	}{{now.Add(-4 * time.Hour), client.ErrExpired}, {now.Add(10 * time.Hour), client.ErrNoShard}} {
		bad := []client.Event{{IndexID: "b", EventID: "ok", Timestamp: now}, {IndexID: "b", EventID: "bad", Timestamp: c2.ts}}
		if _, err := c.WriteEvents(ctx, "events", bad); !errors.Is(err, c2.want) || !strings.Contains(err.Error(), "event 1") {
			t.Errorf("write at %s: %v, want %v", c2.ts, err, c2.want)
		}
	}
	// An event's own TTL: shorter than the retention, and not yet past.
	for _, c2 := range []struct {
		ttl  time.Duration
		ts   time.Time
		want error
	}{{3 * time.Hour, now, client.ErrInvalidArgument}, {-time.Minute, now, client.ErrInvalidArgument}, {time.Minute, now.Add(-2 * time.Minute), client.ErrExpired}} {
		bad := []client.Event{{IndexID: "b", EventID: "ok", Timestamp: now, TTL: time.Hour}, {IndexID: "b", EventID: "bad", Timestamp: c2.ts, TTL: c2.ttl}}
		if _, err := c.WriteEvents(ctx, "events", bad); !errors.Is(err, c2.want) || !strings.Contains(err.Error(), "event 1") {
			t.Errorf("write with ttl %s at %s: %v, want %v", c2.ttl, c2.ts, err, c2.want)
		}
	}
	if n, err := c.WriteEvents(ctx, "events", []client.Event{{IndexID: "ttl", EventID: "short", Timestamp: now, TTL: time.Hour}}); err != nil || n != 1 {
		t.Fatalf("write with a ttl: %d %v", n, err)
	}
	if page, err := c.QueryEvents(ctx, "events", client.EventQuery{IndexID: "ttl"}); err != nil || len(page.Events) != 1 || page.Events[0].EventID != "short" {
		t.Errorf("an event with a ttl: %+v %v", page, err)
	}
	if _, err := c.WriteEvents(ctx, "events", make([]client.Event, 10001)); !errors.Is(err, client.ErrTooLarge) {
		t.Errorf("10001 events: %v", err)
	}
	if page, err := c.QueryEvents(ctx, "events", client.EventQuery{IndexID: "b"}); err != nil || len(page.Events) != 0 {
		t.Errorf("a refused batch wrote %+v %v", page, err)
	}
	if _, err := c.WriteEvents(ctx, "nope", events[:1]); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("write to a missing index: %v", err)
	}

	// Read a page, then everything page by page in both orders.
	page, err := c.QueryEvents(ctx, "events", client.EventQuery{IndexID: "acc/1#.", From: now.Add(-time.Hour), To: now, Limit: 4})
	if err != nil || len(page.Events) != 4 || page.NextPageToken == "" || page.Events[0].EventID != "e00" {
		t.Fatalf("page: %+v %v", page, err)
	}
	if got := page.Events[1]; !got.Timestamp.Equal(events[1].Timestamp) || !bytes.Equal(got.Payload, events[1].Payload) || got.IndexID != "acc/1#." {
		t.Errorf("event %+v, wrote %+v", got, events[1])
	}
	var asc []client.Event
	for ev, err := range c.Events(ctx, "events", client.EventQuery{IndexID: "acc/1#.", Limit: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		asc = append(asc, ev)
	}
	if len(asc) != len(events) || asc[len(asc)-1].EventID != "no-payload" || len(asc[len(asc)-1].Payload) != 0 {
		t.Fatalf("all events ascending: %d, last %+v", len(asc), asc[len(asc)-1])
	}
	var desc []string
	for ev, err := range c.Events(ctx, "events", client.EventQuery{IndexID: "acc/1#.", Desc: true, Limit: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		desc = append(desc, ev.EventID)
		if len(desc) == 10 {
			break // stopping early is fine
		}
	}
	if len(desc) != 10 || desc[0] != "no-payload" || desc[1] != "e24" {
		t.Fatalf("descending: %v", desc)
	}
	for _, err := range c.Events(ctx, "events", client.EventQuery{IndexID: "acc/1#.", From: now, To: now.Add(-time.Hour)}) {
		if !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("from after to: %v", err)
		}
	}

	// Reconcile: a fresh index needs nothing; a lost shard is planned,
	// then created.
	plan, err := c.Reconcile(ctx, "events", client.ReconcileOptions{DryRun: true})
	if err != nil || plan.Applied || len(plan.Actions) != 0 {
		t.Fatalf("dry run: %+v %v", plan, err)
	}
	if plan, err = c.Reconcile(ctx, "events", client.ReconcileOptions{AllowClockJump: true}); err != nil || !plan.Applied || plan.Failed() != 0 {
		t.Fatalf("apply: %+v %v", plan, err)
	}
	if _, err := c.Reconcile(ctx, "nope", client.ReconcileOptions{}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("reconcile a missing index: %v", err)
	}

	// The types read and write the API's JSON.
	roundTrip[client.Index](t, e.rec.lastBody(t, "GET /v1/indexes/{name}"))
	roundTrip[client.EventPage](t, e.rec.lastBody(t, "GET /v1/indexes/{name}/events"))
	roundTrip[client.Plan](t, e.rec.lastBody(t, "POST /v1/indexes/{name}/reconcile"))

	if err := c.DeleteIndex(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Index(ctx, "events"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("index after delete: %v", err)
	}
	if err := c.DeleteIndex(ctx, "events"); err != nil {
		t.Fatalf("delete again: %v", err)
	}
}

func TestLists(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, rootToken)

	// Names with '/', '#', '%' and dots travel escaped; "" is the
	// default version.
	id := client.ListFeatureID{EntityType: "user/kind", Feature: "stories#1%", Version: ""}
	f, created, err := c.CreateListFeature(ctx, id, 720*time.Hour)
	if err != nil || !created || f.TTL != 720*time.Hour || f.Version != "" || f.EntityType != "user/kind" || f.CreatedAt.IsZero() {
		t.Fatalf("create feature: %+v %v %v", f, created, err)
	}
	if _, created, err := c.CreateListFeature(ctx, client.ListFeatureID{EntityType: "user/kind", Feature: "stories#1%", Version: "_"}, 720*time.Hour); err != nil || created {
		t.Fatalf("create again as _: %v %v", created, err)
	}
	// Another TTL changes the version in place.
	if got, created, err := c.CreateListFeature(ctx, id, time.Hour); err != nil || created || got.TTL != time.Hour || got.Table != f.Table {
		t.Fatalf("another ttl: %+v %v %v", got, created, err)
	}
	if got, err := c.ListFeature(ctx, id); err != nil || got.TTL != time.Hour {
		t.Fatalf("feature after the ttl change: %+v %v", got, err)
	}
	if _, _, err := c.CreateListFeature(ctx, id, 720*time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ListFeature(ctx, id); err != nil || got != f {
		t.Fatalf("feature: %+v %v, want %+v", got, err, f)
	}
	other := client.ListFeatureID{EntityType: "user/kind", Feature: "a", Version: "v2"}
	if _, _, err := c.CreateListFeature(ctx, other, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateListFeature(ctx, client.ListFeatureID{EntityType: "item", Feature: "a"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	fs, err := c.ListFeatures(ctx, "user/kind")
	if err != nil || len(fs) != 2 || fs[0].Feature != "a" || fs[0].Version != "v2" || fs[1] != f {
		t.Fatalf("features of user/kind: %+v %v", fs, err)
	}
	if all, err := c.ListFeatures(ctx, ""); err != nil || len(all) != 3 || all[0].EntityType != "item" {
		t.Fatalf("every feature: %+v %v", all, err)
	}
	if err := c.DeleteListFeature(ctx, other); err != nil {
		t.Fatal(err)
	}
	dots := client.ListFeatureID{EntityType: ".", Feature: "..", Version: "."}
	if _, _, err := c.CreateListFeature(ctx, dots, time.Hour); err != nil {
		t.Fatalf("dot names: %v", err)
	}

	now := time.Now().UTC()
	items := []client.ListItem{
		{Value: []byte("story-1"), Timestamp: now.Add(-2 * time.Minute)},
		{Value: nil, Timestamp: now.Add(-time.Minute)}, // the empty value
		{Value: []byte{0, 1, 0xff}, Timestamp: now},
		{Value: []byte("ancient"), Timestamp: now.Add(-1000 * time.Hour)},
	}
	res, err := c.AddListItems(ctx, id, "..", items)
	if err != nil || res != (client.AddListItemsResult{Written: 3, SkippedExpired: 1}) {
		t.Fatalf("add: %+v %v", res, err)
	}
	got, err := c.ListItems(ctx, id, "..", client.ListQuery{})
	if err != nil || len(got) != 3 || !bytes.Equal(got[0].Value, []byte{0, 1, 0xff}) || !got[0].Timestamp.Equal(now) || len(got[1].Value) != 0 {
		t.Fatalf("items: %+v %v", got, err)
	}
	if got, err := c.ListItems(ctx, id, "..", client.ListQuery{MinTimestamp: now.Add(-90 * time.Second), Limit: 1}); err != nil || len(got) != 1 || !got[0].Timestamp.Equal(now) {
		t.Fatalf("items since, limit 1: %+v %v", got, err)
	}
	if got, err := c.ListItems(ctx, id, "never-written", client.ListQuery{}); err != nil || len(got) != 0 {
		t.Fatalf("an unwritten list: %+v %v", got, err)
	}
	roundTrip[client.ListFeature](t, e.rec.lastBody(t, "GET /v1/list-features/{entity_type}/{feature}/{version}"))

	// Paging: one item a page, then every item through the iterator.
	page, err := c.ListItemsPage(ctx, id, "..", client.ListQuery{Limit: 1})
	if err != nil || len(page.Items) != 1 || page.NextPageToken == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	roundTrip[client.ListItemPage](t, e.rec.lastBody(t, "GET /v1/lists/{entity_type}/{feature}/{version}/{entity_id}/items"))
	var all []client.ListItem
	for it, err := range c.AllListItems(ctx, id, "..", client.ListQuery{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, it)
	}
	if every, _ := c.ListItems(ctx, id, "..", client.ListQuery{}); len(all) != len(every) || len(all) < 2 || !all[1].Timestamp.Equal(every[1].Timestamp) {
		t.Fatalf("every item, a page at a time: %+v, want %+v", all, every)
	}

	if err := c.RemoveListItems(ctx, id, "..", []byte{0, 1, 0xff}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ListItems(ctx, id, "..", client.ListQuery{}); len(got) != 2 || string(got[1].Value) != "story-1" {
		t.Fatalf("after removing a value: %+v", got)
	}
	if err := c.ClearList(ctx, id, ".."); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ListItems(ctx, id, "..", client.ListQuery{}); len(got) != 0 {
		t.Fatalf("after clearing: %+v", got)
	}
	if _, err := c.AddListItems(ctx, id, "x", make([]client.ListItem, 1001)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("1001 items: %v", err)
	}
	if err := c.DeleteListFeature(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListItems(ctx, id, "..", client.ListQuery{}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("items of a deleted feature: %v", err)
	}
	if err := c.DeleteListFeature(ctx, id); err != nil {
		t.Fatalf("delete again: %v", err)
	}
	testListCap(t, e, c)
}

// testListCap: a feature's max_items through the client, the count of a
// list, and the delete of a whole feature.
func testListCap(t *testing.T, e *env, c *client.Client) {
	ctx := t.Context()
	id := client.ListFeatureID{EntityType: "user/kind", Feature: "capped#1"}
	two := 2
	f, created, err := c.CreateListFeatureWith(ctx, id, client.ListFeatureConfig{TTL: time.Hour, MaxItems: &two})
	if err != nil || !created || f.MaxItems != 2 {
		t.Fatalf("create with a cap: %+v %v %v", f, created, err)
	}
	roundTrip[client.ListFeature](t, e.rec.lastBody(t, "PUT /v1/list-features/{entity_type}/{feature}/{version}"))
	if f, _, err := c.CreateListFeature(ctx, id, time.Hour); err != nil || f.MaxItems != 2 {
		t.Fatalf("create without a cap keeps it: %+v %v", f, err)
	}
	now := time.Now().UTC().Add(-time.Minute)
	items := []client.ListItem{{Value: []byte("a"), Timestamp: now}, {Value: []byte("b"), Timestamp: now.Add(time.Second)}, {Value: []byte("c"), Timestamp: now.Add(2 * time.Second)}}
	res, err := c.AddListItems(ctx, id, "alice", items)
	if err != nil || res != (client.AddListItemsResult{Written: 3, Trimmed: 1}) {
		t.Fatalf("add beyond the cap: %+v %v", res, err)
	}
	roundTrip[client.AddListItemsResult](t, e.rec.lastBody(t, "POST /v1/lists/{entity_type}/{feature}/{version}/{entity_id}/items"))
	if n, err := c.CountListItems(ctx, id, "alice"); err != nil || n != 2 {
		t.Fatalf("count: %d %v", n, err)
	}
	if n, err := c.CountListItems(ctx, id, "bob"); err != nil || n != 0 {
		t.Fatalf("count of a list never written: %d %v", n, err)
	}
	if _, err := c.CountListItems(ctx, client.ListFeatureID{EntityType: "user/kind", Feature: "nope"}, "bob"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("count of an unknown feature: %v", err)
	}
	v2 := id
	v2.Version = "v2"
	if _, _, err := c.CreateListFeature(ctx, v2, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAllListFeatureVersions(ctx, id.EntityType, id.Feature); err != nil {
		t.Fatal(err)
	}
	for _, v := range []client.ListFeatureID{id, v2} {
		if _, err := c.ListFeature(ctx, v); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("version %q after deleting the feature: %v", v.Version, err)
		}
	}
	if err := c.DeleteAllListFeatureVersions(ctx, id.EntityType, id.Feature); err != nil {
		t.Fatalf("delete the feature again: %v", err)
	}
	if err := c.DeleteAllListFeatureVersions(ctx, "", id.Feature); err == nil {
		t.Fatal("delete of a feature without an entity type: no error")
	}
}

func TestTables(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, rootToken)

	tbl, created, err := c.CreateTable(ctx, "orders", client.TableConfig{DefaultTTL: 90 * time.Second})
	if err != nil || !created || tbl.Name != "orders" || tbl.DefaultTTL != 90*time.Second || tbl.CreatedAt.IsZero() {
		t.Fatalf("create: %+v %v %v", tbl, created, err)
	}
	if _, created, err := c.CreateTable(ctx, "orders", client.TableConfig{DefaultTTL: 90 * time.Second}); err != nil || created {
		t.Fatalf("create again: %v %v", created, err)
	}
	// Another default TTL changes the table in place; KeepDefaultTTL
	// leaves it as it is.
	if got, created, err := c.CreateTable(ctx, "orders", client.TableConfig{}); err != nil || created || got.DefaultTTL != 0 {
		t.Fatalf("another default ttl: %+v %v %v", got, created, err)
	}
	if _, _, err := c.CreateTable(ctx, "orders", client.TableConfig{DefaultTTL: 90 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.CreateTable(ctx, "orders", client.TableConfig{KeepDefaultTTL: true}); err != nil || got.DefaultTTL != 90*time.Second {
		t.Fatalf("create keeping the default ttl: %+v %v", got, err)
	}
	if _, _, err := c.CreateTable(ctx, "no/slash", client.TableConfig{}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("bad name: %v", err)
	}
	if _, _, err := c.CreateTable(ctx, "..", client.TableConfig{}); err != nil {
		t.Fatalf("a table named ..: %v", err)
	}
	if got, err := c.Table(ctx, "orders"); err != nil || got != tbl {
		t.Fatalf("table: %+v %v", got, err)
	}
	if all, err := c.Tables(ctx); err != nil || len(all) != 2 || all[0].Name != ".." || all[1] != tbl {
		t.Fatalf("tables: %+v %v", all, err)
	}

	// Keys with '/', '#', '?' and dots; attributes of any JSON; a TTL of
	// the item's own, or never.
	base := time.Now().UTC().Truncate(time.Millisecond)
	never := time.Duration(0)
	keys := []string{"a/b", "c#d?e", ".", "..", "plain"}
	for i, k := range keys {
		item := client.PutTableItem{Timestamp: base.Add(time.Duration(i) * time.Second), Attributes: map[string]any{"i": i, "k": k}}
		if k == "plain" {
			item.TTL, item.Attributes = &never, nil
		}
		it, err := c.PutTableItem(ctx, "orders", k, item)
		if err != nil || it.Key != k || !it.Timestamp.Equal(item.Timestamp) {
			t.Fatalf("put %q: %+v %v", k, it, err)
		}
		if (k == "plain") != (it.ExpiresAt == nil) {
			t.Errorf("put %q: expires %v", k, it.ExpiresAt)
		}
	}
	it, err := c.TableItem(ctx, "orders", "c#d?e")
	if err != nil || string(it.Attributes) != `{"i":1,"k":"c#d?e"}` || it.ExpiresAt == nil || it.ExpiresAt.Before(base.Add(80*time.Second)) {
		t.Fatalf("get: %+v %s %v", it, it.Attributes, err)
	}
	if it, err := c.TableItem(ctx, "orders", "plain"); err != nil || string(it.Attributes) != "{}" || it.ExpiresAt != nil {
		t.Fatalf("get plain: %+v %v", it, err)
	}
	roundTrip[client.TableItem](t, e.rec.lastBody(t, "GET /v1/tables/{table}/items/{key}"))
	roundTrip[client.Table](t, e.rec.lastBody(t, "GET /v1/tables/{table}"))

	// An item whose own TTL has passed is gone.
	short := 50 * time.Millisecond
	if _, err := c.PutTableItem(ctx, "orders", "brief", client.PutTableItem{Timestamp: base, TTL: &short, Attributes: json.RawMessage(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * short)
	if _, err := c.TableItem(ctx, "orders", "brief"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("expired item: %v", err)
	}

	// Pages and the iterator.
	page, err := c.QueryTableItems(ctx, "orders", client.TableItemsQuery{Limit: 2})
	if err != nil || len(page.Items) != 2 || page.NextPageToken == "" || page.Items[0].Key != "a/b" {
		t.Fatalf("page: %+v %v", page, err)
	}
	roundTrip[client.TableItemsPage](t, e.rec.lastBody(t, "GET /v1/tables/{table}/items"))
	var got []string
	for it, err := range c.TableItems(ctx, "orders", client.TableItemsQuery{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.Key)
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("every item: %q, want %q", got, keys)
	}
	after := base.Add(2 * time.Second)
	got = nil
	for it, err := range c.TableItems(ctx, "orders", client.TableItemsQuery{After: &after}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.Key)
	}
	if !slices.Equal(got, keys[3:]) {
		t.Fatalf("items after %s: %q", after, got)
	}

	if err := c.DeleteTableItem(ctx, "orders", ".."); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TableItem(ctx, "orders", ".."); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deleted item: %v", err)
	}
	if err := c.DeleteTableItem(ctx, "orders", "never-was"); err != nil {
		t.Fatalf("delete a missing item: %v", err)
	}
	if _, err := c.PutTableItem(ctx, "nope", "k", client.PutTableItem{Timestamp: base}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("put into a missing table: %v", err)
	}
	if err := c.DeleteTable(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Table(ctx, "orders"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deleted table: %v", err)
	}
	if err := c.DeleteTable(ctx, "orders"); err != nil {
		t.Fatalf("delete again: %v", err)
	}
}

func TestAdmin(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, rootToken)
	if _, _, err := c.CreateTable(ctx, "tenant_a", client.TableConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutTableItem(ctx, "tenant_a", "k", client.PutTableItem{Timestamp: time.Now(), Attributes: map[string]int{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	tables, err := c.AdminTables(ctx)
	if err != nil || !slices.ContainsFunc(tables.Tables, func(pt client.PhysicalTable) bool { return pt.Name == "ebb_meta" && pt.Rows > 0 }) ||
		len(tables.LogicalTables) != 1 || tables.LogicalTables[0] != (client.LogicalTable{Name: "tenant_a", Items: 1, Bytes: tables.LogicalTables[0].Bytes, Expiry: client.ExpirySweep}) ||
		tables.LogicalTables[0].Bytes <= 0 {
		t.Fatalf("admin tables: %+v %v", tables, err)
	}
	roundTrip[client.AdminTables](t, e.rec.lastBody(t, "GET /v1/admin/tables"))

	cl, err := c.Cluster(ctx)
	if err != nil || cl.Replica == "" || len(cl.Leases) == 0 || cl.Backend != "pebble" || cl.Capabilities == nil || cl.Capabilities.MaxRowBytes <= 0 {
		t.Fatalf("cluster: %+v %v", cl, err)
	}
	for _, l := range cl.Leases {
		if l.Role == "" || (l.Holder != "" && l.Expires.IsZero()) {
			t.Errorf("lease %+v", l)
		}
	}
	roundTrip[client.Cluster](t, e.rec.lastBody(t, "GET /v1/admin/cluster"))

	dir := filepath.Join(t.TempDir(), "backup")
	b, err := c.Backup(ctx, dir)
	if err != nil || b.Dir != dir || b.Bytes <= 0 || b.Took <= 0 {
		t.Fatalf("backup: %+v %v", b, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("backup directory: %v", err)
	}
	if _, err := c.Backup(ctx, dir); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("backup into an existing directory: %v", err)
	}
	if _, err := c.Backup(ctx, "relative/dir"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("backup into a relative directory: %v", err)
	}
}

// roundTrip checks that T decodes the server's JSON and encodes it back
// the same, so that what the CLI prints with --output json is the API's
// own shape.
func roundTrip[T any](t *testing.T, body []byte) {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, body)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	want, _ := decodeJSON(body)
	got, _ := decodeJSON(again)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%T does not round-trip:\n got %s\nwant %s", v, again, bytes.TrimSpace(body))
	}
}

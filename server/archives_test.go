package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// TestArchiveRoutes: an index put with an archive shows it; its expired
// shard, archived by the manager, is listed, restored (read by queries,
// its drop held in the plan) and released; bad locations and indexes
// without an archive are refused.
func TestArchiveRoutes(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	clk := storetest.NewClock(t0)
	st := testbackend.Pebble(t, clk.Now)
	reg := prometheus.NewRegistry()
	svc, err := timeseries.New(context.Background(), st, timeseries.Options{Now: clk.Now, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, nil), Registerer: reg, Features: []server.Feature{server.Indexes(svc)}})
	base := ts.URL
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(t.TempDir())}).String()

	expectError(t, send(t, "PUT", base+"/v1/indexes/ev", `{"table_bucket":"1h","partition_bucket":"1h","retention":"24h","archive":{"to":"ftp://x"}}`),
		http.StatusBadRequest, "invalid_argument")
	var idx struct {
		Archive *struct {
			To string `json:"to"`
		} `json:"archive"`
	}
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", fmt.Sprintf(`{"table_bucket":"1h","partition_bucket":"1h","retention":"24h","archive":{"to":%q}}`, loc)), http.StatusCreated, &idx)
	if idx.Archive == nil || idx.Archive.To != loc {
		t.Fatalf("archive %+v, want %s", idx.Archive, loc)
	}
	decode(t, send(t, "PUT", base+"/v1/indexes/plain", `{"table_bucket":"1h","partition_bucket":"1h","retention":"24h"}`), http.StatusCreated, &idx)
	expectError(t, send(t, "GET", base+"/v1/indexes/plain/archives", ""), http.StatusBadRequest, "invalid_argument")

	ts1 := t0.Add(-23*time.Hour + time.Minute)
	if r := postEvents(t, base, []eventBody{{IndexID: "a", EventID: "e1", Timestamp: ts1.Format(time.RFC3339), Payload: []byte("x")}}); r.status != http.StatusOK {
		t.Fatalf("write: %d %s", r.status, r.body)
	}
	shard := shardmgr.ShardName("ev", t0.Add(-23*time.Hour))
	clk.Set(t0.Add(2 * time.Hour))
	if err := svc.Manager().RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Archives []struct {
			Table string `json:"table"`
			Rows  int64  `json:"rows"`
		} `json:"archives"`
		Restored []struct{} `json:"restored"`
	}
	decode(t, send(t, "GET", base+"/v1/indexes/ev/archives", ""), http.StatusOK, &list)
	found := false
	for _, a := range list.Archives {
		found = found || (a.Table == shard && a.Rows == 1)
	}
	if !found || list.Restored == nil {
		t.Fatalf("archives %+v", list)
	}
	expectError(t, send(t, "POST", base+"/v1/indexes/ev/archives/ev_3600/restore", ""), http.StatusNotFound, "not_found")

	var restored struct {
		Table    string `json:"table"`
		Rows     int64  `json:"rows"`
		Complete bool   `json:"complete"`
	}
	decode(t, send(t, "POST", base+"/v1/indexes/ev/archives/"+shard+"/restore", ""), http.StatusOK, &restored)
	if restored.Table != shard || restored.Rows != 1 || !restored.Complete {
		t.Fatalf("restored %+v", restored)
	}
	// Restoring again answers the restored shard as it is.
	decode(t, send(t, "POST", base+"/v1/indexes/ev/archives/"+shard+"/restore", ""), http.StatusOK, &restored)

	var page struct {
		Events []eventBody `json:"events"`
	}
	decode(t, send(t, "GET", base+"/v1/indexes/ev/events?index_id=a", ""), http.StatusOK, &page)
	if len(page.Events) != 1 || page.Events[0].EventID != "e1" {
		t.Fatalf("events of the restored shard: %+v", page.Events)
	}
	var plan struct {
		Actions []struct {
			Op       string `json:"op"`
			Table    string `json:"table"`
			Reason   string `json:"reason"`
			Deferred bool   `json:"deferred"`
		} `json:"actions"`
	}
	decode(t, send(t, "POST", base+"/v1/indexes/ev/reconcile", ""), http.StatusOK, &plan)
	held := false
	for _, a := range plan.Actions {
		held = held || (a.Op == "drop" && a.Table == shard && a.Deferred && strings.Contains(a.Reason, "restored"))
	}
	if !held {
		t.Fatalf("plan does not hold the restored shard's drop: %+v", plan.Actions)
	}
	if r := send(t, "POST", base+"/v1/indexes/ev/archives/"+shard+"/release", ""); r.status != http.StatusNoContent {
		t.Fatalf("release: %d %s", r.status, r.body)
	}
	expectError(t, send(t, "POST", base+"/v1/indexes/ev/archives/"+shard+"/release", ""), http.StatusNotFound, "not_found")
	decode(t, send(t, "GET", base+"/v1/indexes/ev/events?index_id=a", ""), http.StatusOK, &page)
	if len(page.Events) != 0 {
		t.Fatalf("events after the release: %+v", page.Events)
	}
}

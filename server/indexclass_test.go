package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

// TestIndexColdAfter: an index's capacity policy may name cold_after
// alone; GET shows it and each shard's class, and the plan moves shards
// that ended cold_after ago to standard_ia with the class in its actions.
// On a backend without table classes (Pebble) cold_after is refused with
// 400 and no index is made; a bad cold_after is 400 too.
func TestIndexColdAfter(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	clock := storetest.NewClock(now)
	st := storetest.NewClassStore(testbackend.Pebble(t, clock.Now), store.DynamoDBClasses, clock.Now)
	reg := prometheus.NewRegistry()
	svc, err := timeseries.New(context.Background(), st, timeseries.Options{Registerer: reg, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, nil), Registerer: reg, Features: []server.Feature{server.Indexes(svc)}})
	body := `{"table_bucket":"24h","partition_bucket":"1h","retention":"240h","capacity":{"cold_after":"72h"}}`
	var idx struct {
		Capacity struct {
			HotWriteUnits int64  `json:"hot_write_units"`
			ColdAfter     string `json:"cold_after"`
		} `json:"capacity"`
		Shards []struct{ Table, Class string } `json:"shards"`
	}
	decode(t, send(t, http.MethodPut, ts.URL+"/v1/indexes/ev", body), http.StatusCreated, &idx)
	if idx.Capacity.ColdAfter != "72h" || idx.Capacity.HotWriteUnits != 0 {
		t.Fatalf("capacity %+v, want cold_after 72h alone", idx.Capacity)
	}
	var plan struct {
		Actions []struct{ Op, Table, Class, Reason string } `json:"actions"`
	}
	decode(t, send(t, http.MethodPost, ts.URL+"/v1/indexes/ev/reconcile?dry_run=false", ""), http.StatusOK, &plan)
	moved := map[string]bool{}
	for _, a := range plan.Actions {
		if a.Op == "set_class" {
			if a.Class != "standard_ia" || !strings.HasPrefix(a.Reason, "cold: ended ") {
				t.Fatalf("action %+v", a)
			}
			moved[a.Table] = true
		}
	}
	// Shards of Feb 28 .. Mar 6 ended at least 3 days before Mar 10 12:00.
	if len(moved) != 7 {
		t.Fatalf("moved %v, want the 7 shards of Feb 28 .. Mar 6; plan %+v", moved, plan)
	}
	decode(t, send(t, http.MethodGet, ts.URL+"/v1/indexes/ev", ""), http.StatusOK, &idx)
	for _, sh := range idx.Shards {
		want := ""
		if moved[sh.Table] {
			want = "standard_ia"
		}
		if sh.Class != want {
			t.Fatalf("shard %s class %q, want %q", sh.Table, sh.Class, want)
		}
	}
	expectError(t, send(t, http.MethodPut, ts.URL+"/v1/indexes/ev2", `{"table_bucket":"24h","partition_bucket":"1h","retention":"240h","capacity":{"cold_after":"soon"}}`),
		http.StatusBadRequest, "invalid_argument")
	expectError(t, send(t, http.MethodPut, ts.URL+"/v1/indexes/ev2", `{"table_bucket":"24h","partition_bucket":"1h","retention":"240h","capacity":{"cold_after":"72h","peak_read_units":5}}`),
		http.StatusBadRequest, "invalid_argument")

	plain, _, _ := indexServer(t)
	r := send(t, http.MethodPut, plain+"/v1/indexes/ev", body)
	expectError(t, r, http.StatusBadRequest, "invalid_argument")
	if !strings.Contains(string(r.body), "no table classes") {
		t.Fatalf("refusal on pebble: %s", r.body)
	}
	expectError(t, send(t, http.MethodGet, plain+"/v1/indexes/ev", ""), http.StatusNotFound, "not_found")
}

package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// noLister is a store that cannot list a table's partitions: it hides
// every optional part of the store it embeds.
type noLister struct{ store.Store }

// rewriteBody is the "rewrite" member of a feature or table.
type rewriteBody struct {
	Rewrite *struct {
		State      string `json:"state"`
		TTL        string `json:"ttl"`
		Scanned    int64  `json:"scanned"`
		Rewritten  int64  `json:"rewritten"`
		Removed    int64  `json:"removed"`
		FinishedAt string `json:"finished_at"`
	} `json:"rewrite"`
	TTL        string `json:"ttl"`
	DefaultTTL string `json:"default_ttl"`
}

// TestRewriteAPI asks for TTL rewrites over HTTP: the PUT answers with the
// job, a GET follows it to its end; a backend without a partition lister
// refuses a list rewrite with 400 and changes nothing.
func TestRewriteAPI(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(listsStart)
	st := testbackend.Pebble(t, clock.Now)
	svc, err := lists.New(ctx, st, lists.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := multitable.New(ctx, st, multitable.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, clock.Now), Now: clock.Now, Features: []server.Feature{server.Lists(svc), server.Tables(reg)}})
	e := &listsServer{url: ts.URL, clock: clock}

	fp := listFeaturePath("user", "seen", "_")
	listsExpect(t, "create", e.do(t, http.MethodPut, fp, "", map[string]any{"ttl": "1h"}), http.StatusCreated, "")
	items := map[string]any{"items": []listItemBody{{Value: b64("a"), Timestamp: "2026-11-22T10:00:00Z"}, {Value: b64("b"), Timestamp: "2026-11-22T09:30:00Z"}}}
	listsExpect(t, "add", e.do(t, http.MethodPost, listItemsPath("user", "seen", "_", "alice"), "", items), http.StatusOK, "")
	r := e.do(t, http.MethodPut, fp, "", map[string]any{"ttl": "10m", "rewrite": true})
	listsExpect(t, "change with rewrite", r, http.StatusOK, "")
	if b := listsDecode[rewriteBody](t, r); b.TTL != "10m" || b.Rewrite == nil || b.Rewrite.State != "running" || b.Rewrite.TTL != "10m" {
		t.Fatalf("answer to the change: %s", r.body)
	}

	tp := "/v1/tables/orders"
	listsExpect(t, "create table", e.do(t, http.MethodPut, tp, "", map[string]any{"default_ttl": "1h"}), http.StatusCreated, "")
	listsExpect(t, "put", e.do(t, http.MethodPut, tp+"/items/o-1", "", map[string]any{"timestamp": "2026-11-22T10:00:00Z", "attributes": map[string]any{}}), http.StatusOK, "")
	r = e.do(t, http.MethodPut, tp, "", map[string]any{"default_ttl": "2h", "rewrite": true})
	listsExpect(t, "change the table with rewrite", r, http.StatusOK, "")
	if b := listsDecode[rewriteBody](t, r); b.Rewrite == nil || b.Rewrite.State != "running" {
		t.Fatalf("answer to the table's change: %s", r.body)
	}

	clock.Advance(lists.DefaultCacheTTL)
	if err := svc.RunRewrites(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := reg.RunRewrites(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	r = e.do(t, http.MethodGet, fp, "", nil)
	if b := listsDecode[rewriteBody](t, r); b.Rewrite == nil || b.Rewrite.State != "done" || b.Rewrite.Scanned != 2 || b.Rewrite.Rewritten != 1 || b.Rewrite.Removed != 1 || b.Rewrite.FinishedAt == "" {
		t.Fatalf("feature after its rewrite: %s", r.body)
	}
	r = e.do(t, http.MethodGet, tp, "", nil)
	if b := listsDecode[rewriteBody](t, r); b.Rewrite == nil || b.Rewrite.State != "done" || b.Rewrite.Rewritten != 1 {
		t.Fatalf("table after its rewrite: %s", r.body)
	}
	// A feature or table without a rewrite has no "rewrite" member.
	r = e.do(t, http.MethodGet, "/v1/list-features/user", "", nil)
	if b := listsDecode[struct{ Features []rewriteBody }](t, r); len(b.Features) != 1 || b.Features[0].Rewrite != nil {
		t.Fatalf("feature listing: %s", r.body)
	}

	// Refused where partitions cannot be listed: nothing changes.
	bare := noLister{testbackend.Pebble(t, clock.Now)}
	svc2, err := lists.New(ctx, bare, lists.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts2, _ := start(t, server.Options{Admin: adminFor(t, bare, clock.Now), Now: clock.Now, Features: []server.Feature{server.Lists(svc2)}})
	e2 := &listsServer{url: ts2.URL, clock: clock}
	listsExpect(t, "create", e2.do(t, http.MethodPut, fp, "", map[string]any{"ttl": "1h"}), http.StatusCreated, "")
	listsExpect(t, "rewrite without a lister", e2.do(t, http.MethodPut, fp, "", map[string]any{"ttl": "10m", "rewrite": true}), http.StatusBadRequest, server.CodeInvalidArgument)
	r = e2.do(t, http.MethodGet, fp, "", nil)
	if b := listsDecode[rewriteBody](t, r); b.TTL != "1h" || b.Rewrite != nil {
		t.Fatalf("feature after a refused rewrite: %s", r.body)
	}
}

package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
)

// TestIndexBeyondManagerBudgetIs400: an index the shard manager could not
// keep is refused at create with a 400 naming the rule, and nothing is
// created; the case was 250 indexes of 1 s shards, all accepted.
func TestIndexBeyondManagerBudgetIs400(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: testbackend.Pebble(t, nil), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ts, _ := start(t, server.Options{DB: db})
	body := `{"table_bucket":"1s","partition_bucket":"1s","retention":"1s","runway":31}`
	decode(t, send(t, "PUT", ts.URL+"/v1/indexes/s1", body), http.StatusCreated, nil)
	r := send(t, "PUT", ts.URL+"/v1/indexes/s2", body)
	expectError(t, r, http.StatusBadRequest, "invalid_argument")
	if !strings.Contains(string(r.body), "table_bucket") {
		t.Fatalf("the refusal does not say what to change: %s", r.body)
	}
	expectError(t, send(t, "GET", ts.URL+"/v1/indexes/s2", ""), http.StatusNotFound, "not_found")
}

package server_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/cost"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/server"
)

func TestAdminUsage(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: testbackend.Pebble(t, nil), NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	auth := loadAuth(t, "tokens:\n- {token: root, scopes: [admin]}\n- {token: any, scopes: ['*:*']}\n")
	ts, _ := start(t, server.Options{DB: db, Auth: auth})

	if _, _, err := db.Tables().CreateTable(t.Context(), "t", multitable.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Tables().Put(t.Context(), "t", multitable.PutItem{Key: "k", Timestamp: time.Now(), Attributes: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}

	r := call(t, "GET", ts.URL+"/v1/admin/usage?storage=true", "root", nil)
	if r.status != 200 {
		t.Fatalf("usage: %d %s", r.status, r.body)
	}
	var u meter.Usage
	if err := json.Unmarshal(r.body, &u); err != nil {
		t.Fatal(err)
	}
	if got := u.Total("dynamodb", "write", "shared_table"); got < 1 {
		t.Errorf("shared-table writes: %d DynamoDB units, want at least one; %s", got, r.body)
	}
	if got := u.Total("keyspaces", "write", "catalog"); got < 1 {
		t.Errorf("catalog writes: %d Keyspaces units, want at least one (the shared table's record)", got)
	}
	var stored bool
	for _, s := range u.Storage {
		stored = stored || (s.Class == "shared_table" && s.Rows > 0)
	}
	if !stored {
		t.Errorf("storage=true: no shared_table rows in %+v", u.Storage)
	}

	if r := call(t, "GET", ts.URL+"/v1/admin/usage?storage=maybe", "root", nil); r.status != 400 || r.errorCode(t) != "invalid_argument" {
		t.Errorf("storage=maybe: %d %s", r.status, r.body)
	}

	// cost=true adds the month's projection on the built-in prices, as
	// `ebb cost --from` computes it from the same usage.
	r = call(t, "GET", ts.URL+"/v1/admin/usage?cost=true&storage=true", "root", nil)
	if r.status != 200 {
		t.Fatalf("usage with cost: %d %s", r.status, r.body)
	}
	var withCost struct {
		meter.Usage
		Cost *cost.Live `json:"cost"`
	}
	if err := json.Unmarshal(r.body, &withCost); err != nil {
		t.Fatal(err)
	}
	if withCost.Cost == nil {
		t.Fatalf("cost=true: no cost in %s", r.body)
	}
	want, err := cost.Project(withCost.Usage, cost.DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	if len(withCost.Cost.Projections) != 2 || !reflect.DeepEqual(withCost.Cost, want) {
		t.Errorf("cost=true: %+v, want the projection of the same usage %+v", withCost.Cost, want)
	}
	if p := withCost.Cost.Projections[0]; p.Writes <= 0 || p.Total <= 0 {
		t.Errorf("cost=true: %s projection %+v: writes and total should be above zero", p.Provider, p)
	}
	if r := call(t, "GET", ts.URL+"/v1/admin/usage", "root", nil); bytes.Contains(r.body, []byte(`"cost"`)) {
		t.Errorf("no cost asked, cost given: %s", r.body)
	}
	if r := call(t, "GET", ts.URL+"/v1/admin/usage?cost=1", "root", nil); r.status != 400 || r.errorCode(t) != "invalid_argument" {
		t.Errorf("cost=1: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", ts.URL+"/v1/admin/usage", "any", nil); r.status != 403 {
		t.Errorf("without the admin scope: %d %s", r.status, r.body)
	}
}

func TestAdminUsageMeteringOff(t *testing.T) {
	db, err := ebb.Open(t.Context(), ebb.Options{Store: testbackend.Pebble(t, nil), NoBackground: true, NoMetering: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ts, _ := start(t, server.Options{DB: db})
	if r := call(t, "GET", ts.URL+"/v1/admin/usage", "", nil); r.status != 404 || r.errorCode(t) != "not_found" {
		t.Errorf("metering off: %d %s", r.status, r.body)
	}
}

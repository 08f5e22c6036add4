package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	want.CompareModes(withCost.Usage, cost.DefaultPrices(), 0)
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
	// gone_within names the cheapest expiry mode that prompt: within a
	// minute only the sweeper is.
	r = call(t, "GET", ts.URL+"/v1/admin/usage?cost=true&gone_within=1m", "root", nil)
	var bounded struct {
		Cost *cost.Live `json:"cost"`
	}
	if err := json.Unmarshal(r.body, &bounded); err != nil || r.status != 200 || bounded.Cost == nil {
		t.Fatalf("gone_within=1m: %d %s %v", r.status, r.body, err)
	}
	for _, p := range bounded.Cost.Projections {
		if len(p.Modes) != 3 || p.CheapestMode != cost.ModeSweep || p.Modes[1].Meets || p.Modes[2].Meets {
			t.Errorf("gone_within=1m: %s: %+v, cheapest %q; want sweep alone meeting it", p.Provider, p.Modes, p.CheapestMode)
		}
	}
	if r := call(t, "GET", ts.URL+"/v1/admin/usage?cost=true&gone_within=soon", "root", nil); r.status != 400 || r.errorCode(t) != "invalid_argument" {
		t.Errorf("gone_within=soon: %d %s", r.status, r.body)
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

// TestAdminUsageCounts drives a known sequence of index writes and reads
// through a server wired as `ebb serve` wires one (ebb.Open, metering on,
// one registry for the DB and the server) and holds the request units that
// GET /v1/admin/usage and /metrics expose to the units worked out by hand.
// It runs on the embedded backend and on DynamoDB at EBB_DYNAMODB_ENDPOINT
// (scripts/with-dynalite.sh) when EBB_TEST_BACKENDS selects it, and then
// fails, never skips, without the endpoint: the meter counts what the providers would bill, so the figures are the
// same on both.
func TestAdminUsageCounts(t *testing.T) {
	for _, b := range []testbackend.Named{{Name: "pebble", Open: testbackend.Pebble}, {Name: "dynamodb", Open: testbackend.Dynamo}} {
		t.Run(b.Name, func(t *testing.T) { checkUsageCounts(t, b.Open) })
	}
}

func checkUsageCounts(t *testing.T, open testbackend.Factory) {
	reg := prometheus.NewRegistry()
	db, err := ebb.Open(t.Context(), ebb.Options{Store: open(t, nil), NoBackground: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	auth := loadAuth(t, "tokens:\n- {token: root, scopes: [admin]}\n")
	ts, _ := start(t, server.Options{DB: db, Auth: auth, Registerer: reg, Gatherer: reg})
	do := func(method, path, body string) response {
		t.Helper()
		var r response
		if body == "" {
			r = call(t, method, ts.URL+path, "root", nil)
		} else {
			r = call(t, method, ts.URL+path, "root", strings.NewReader(body))
		}
		if r.status >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
		}
		return r
	}
	// shard is what the server exposes for index shards: per operation
	// from the usage, and the ebb_request_units_total series from /metrics.
	type shard struct {
		ops    map[string]meter.OpUsage
		series map[string]float64
	}
	seriesRE := regexp.MustCompile(`^ebb_request_units_total\{class="index_shard",provider_model="(\w+)",unit="(\w+)"\} (\S+)$`)
	read := func() shard {
		t.Helper()
		var u meter.Usage
		if err := json.Unmarshal(do("GET", "/v1/admin/usage", "").body, &u); err != nil {
			t.Fatal(err)
		}
		s := shard{ops: map[string]meter.OpUsage{}, series: map[string]float64{}}
		for _, o := range u.Operations {
			if o.Class == "index_shard" {
				s.ops[o.Op] = o
			}
		}
		for _, line := range strings.Split(string(do("GET", "/metrics", "").body), "\n") {
			if m := seriesRE.FindStringSubmatch(line); m != nil {
				v, err := strconv.ParseFloat(m[3], 64)
				if err != nil {
					t.Fatal(err)
				}
				s.series[m[1]+"/"+m[2]] = v
			}
		}
		if len(s.series) != 6 {
			t.Fatalf("/metrics has %d index_shard series of ebb_request_units_total, want 6: %v", len(s.series), s.series)
		}
		return s
	}

	do("PUT", "/v1/indexes/ev", `{"table_bucket":"1h","partition_bucket":"10m","retention":"24h"}`)
	before := read()
	// Four events of one 10-minute partition of the current shard, each with
	// a payload of 100 bytes, so that all four share a partition.
	base := time.Now().UTC().Truncate(10 * time.Minute)
	event := func(i int) string {
		return fmt.Sprintf(`{"index_id":"acc_1","event_id":"e%d","timestamp":%q,"payload":%q}`,
			i, base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), base64.StdEncoding.EncodeToString(make([]byte, 100)))
	}
	// 1. One event alone. Its DynamoDB item: pk 2 + ("acc_1" 5+2, the
	// bucket 8), sk 2 + 1 + (the timestamp 8, "e1" 2+2), x 1+11 (never
	// expires: 19 digits), v0 2+100, e0 2+11 = 159 bytes: 1 WRU. On
	// Keyspaces about 260 bytes (keys twice, a client-side timestamp per
	// cell): 1 WRU. Native TTL would delete it: one
	// item, one TTL delete unit.
	do("POST", "/v1/indexes/ev/events", `{"events":[`+event(1)+`]}`)
	// 2. Three events in one request: one write of three rows of one
	// partition, a transaction on DynamoDB and a LOGGED batch on
	// Keyspaces, 2 units a row on each. Native TTL: 3 and 3.
	do("POST", "/v1/indexes/ev/events", `{"events":[`+event(2)+","+event(3)+","+event(4)+`]}`)
	// 3. Read the four back: each store read returns at most 4 rows of
	// about 160 bytes, within 4 KB: one read unit per read on each model.
	q := url.Values{"index_id": {"acc_1"}, "from": {base.Add(-time.Hour).Format(time.RFC3339)},
		"to": {base.Add(time.Second).Format(time.RFC3339)}, "limit": {"10"}}
	var page struct{ Events []json.RawMessage }
	if err := json.Unmarshal(do("GET", "/v1/indexes/ev/events?"+q.Encode(), "").body, &page); err != nil || len(page.Events) != 4 {
		t.Fatalf("read back %d events, %v", len(page.Events), err)
	}
	after := read()

	delta := func(op string) meter.OpUsage {
		a, b := after.ops[op], before.ops[op]
		d := meter.OpUsage{Requests: a.Requests - b.Requests, Rows: a.Rows - b.Rows, Bytes: a.Bytes - b.Bytes,
			Units: map[string]map[string]int64{}}
		for _, m := range []string{"dynamodb", "keyspaces"} {
			d.Units[m] = map[string]int64{}
			for _, u := range []string{"write", "read", "native_ttl_delete"} {
				d.Units[m][u] = a.Units[m][u] - b.Units[m][u]
			}
		}
		return d
	}
	up := delta("upsert")
	if up.Requests != 2 || up.Rows != 4 || up.Bytes != 4*159 {
		t.Errorf("upserts: %d requests, %d rows, %d bytes; want 2, 4, %d", up.Requests, up.Rows, up.Bytes, 4*159)
	}
	for _, m := range []string{"dynamodb", "keyspaces"} {
		if got := up.Units[m]; got["write"] != 1+3*2 || got["native_ttl_delete"] != 4 || got["read"] != 0 {
			t.Errorf("%s upsert units %v, want 7 write, 4 native_ttl_delete", m, got)
		}
	}
	qu := delta("query")
	if qu.Requests < 1 || qu.Rows != 4 {
		t.Errorf("queries: %d requests, %d rows; want at least one, and 4 rows", qu.Requests, qu.Rows)
	}
	for _, m := range []string{"dynamodb", "keyspaces"} {
		if got := qu.Units[m]["read"]; got != qu.Requests {
			t.Errorf("%s query read units %d, want one for each of the %d reads", m, got, qu.Requests)
		}
	}
	// /metrics exposes the same units, by class.
	for _, m := range []string{"dynamodb", "keyspaces"} {
		for _, c := range []struct {
			unit string
			want int64
		}{{"write", 7}, {"native_ttl_delete", 4}, {"read", qu.Requests}} {
			key := m + "/" + c.unit
			if got := after.series[key] - before.series[key]; got != float64(c.want) {
				t.Errorf("ebb_request_units_total{class=index_shard,provider_model=%s,unit=%s} rose by %v, want %d", m, c.unit, got, c.want)
			}
		}
	}
}

package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store/cql/cqltest"
)

// TestServeCQL runs `ebb serve --backend cql` on the cluster at
// EBB_CQL_HOSTS (a local Apache Cassandra under `make test`) in a keyspace
// of its own, and drives the index, list and shared-table API end to end.
// It runs when EBB_TEST_BACKENDS selects cql, and then fails, never skips,
// without a cluster.
func TestServeCQL(t *testing.T) {
	hosts := strings.Join(cqltest.Require(t), ",")
	keyspace := fmt.Sprintf("ebbt_serve_%06x", rand.Uint32()&0xffffff)
	p := startServe(t, "--addr", "127.0.0.1:0", "--backend", "cql", "--cql-hosts", hosts,
		"--cql-keyspace", keyspace, "--cql-create-keyspace", "--cql-consistency", "ONE", "--lease-duration", "2s")
	fail := func(what string, status int, body string) {
		t.Helper()
		t.Fatalf("%s: %d %s\nserver log:\n%s", what, status, body, tail(p.stderr.String(), 30))
	}

	if status, body := send(t, "PUT", p.url+"/v1/indexes/ev", map[string]any{
		"table_bucket": "1h", "partition_bucket": "10m", "retention": "24h",
	}); status != 201 {
		fail("create index", status, body)
	}
	now := time.Now().UTC()
	if status, body := send(t, "POST", p.url+"/v1/indexes/ev/events", map[string]any{"events": []map[string]any{
		{"index_id": "acct/1", "event_id": "e1", "timestamp": now.Add(-time.Minute).Format(time.RFC3339Nano), "payload": "AAE="},
		{"index_id": "acct/1", "event_id": "e2", "timestamp": now.Format(time.RFC3339Nano), "payload": "AgM="},
	}}); status != 200 || !strings.Contains(body, `"written":2`) {
		fail("write events", status, body)
	}
	from := now.Add(-time.Hour).Format(time.RFC3339Nano)
	to := now.Add(time.Minute).Format(time.RFC3339Nano)
	status, body := get(t, p.url+"/v1/indexes/ev/events?index_id=acct%2F1&order=desc&from="+from+"&to="+to, "")
	if status != 200 || !strings.Contains(body, `"e2"`) || strings.Index(body, `"e2"`) > strings.Index(body, `"e1"`) {
		fail("read events newest first", status, body)
	}

	if status, body := send(t, "PUT", p.url+"/v1/list-features/user/seen/v1", map[string]any{"ttl": "720h"}); status != 201 {
		fail("create list feature", status, body)
	}
	if status, body := send(t, "POST", p.url+"/v1/lists/user/seen/v1/u1/items", map[string]any{"items": []map[string]any{
		{"value": "cDE=", "timestamp": now.Add(-time.Second).Format(time.RFC3339Nano)},
		{"value": "cDI=", "timestamp": now.Format(time.RFC3339Nano)},
	}}); status != 200 || !strings.Contains(body, `"written":2`) {
		fail("add list items", status, body)
	}
	if status, body := get(t, p.url+"/v1/lists/user/seen/v1/u1/items", ""); status != 200 || !strings.Contains(body, "cDI=") || strings.Index(body, "cDI=") > strings.Index(body, "cDE=") {
		fail("read list newest first", status, body)
	}

	if status, body := send(t, "PUT", p.url+"/v1/tables/sessions", map[string]any{"default_ttl": "1h"}); status != 201 {
		fail("create shared table", status, body)
	}
	if status, body := send(t, "PUT", p.url+"/v1/tables/sessions/items/k1", map[string]any{
		"timestamp": now.Format(time.RFC3339Nano), "attributes": map[string]string{"user": "u1"},
	}); status != 200 {
		fail("put item", status, body)
	}
	if status, body := get(t, p.url+"/v1/tables/sessions/items/k1", ""); status != 200 || !strings.Contains(body, `"user":"u1"`) {
		fail("get item", status, body)
	}
	if status, body := get(t, p.url+"/v1/admin/cluster", ""); status != 200 || !strings.Contains(body, `"shard-manager"`) {
		fail("cluster view", status, body)
	}
}

package server_test

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/migrate/legacyopen"
	"github.com/ebb-data/ebb/server"
)

// migrationAuthYAML has one token per index, one for every index and one
// admin.
const migrationAuthYAML = `
tokens:
  - token: admin-token
    scopes: [admin]
  - token: all-token
    scopes: ["*:*"]
  - token: ia-token
    scopes: ["index:ia"]
  - token: ib-token
    scopes: ["index:ib"]
  - token: ic-token
    scopes: ["index:ic"]
`

// migrationServer serves a DB on the embedded backend with
// migrationAuthYAML, with the indexes ia, ib and ic created, and the
// opener of DynamoDB and CQL legacy tables that ebb serve has.
func migrationServer(t *testing.T) string {
	t.Helper()
	return migrationServerWith(t, legacyopen.New(legacyopen.Options{}))
}

// migrationServerWith is migrationServer with the given legacy opener;
// nil offers no DynamoDB or CQL legacy tables.
func migrationServerWith(t *testing.T, opener migrate.Opener) string {
	t.Helper()
	db, err := ebb.Open(t.Context(), ebb.Options{Store: testbackend.Pebble(t, nil), NoBackground: true, LegacyOpener: opener})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ts, _ := start(t, server.Options{DB: db, Auth: loadAuth(t, migrationAuthYAML)})
	for _, name := range []string{"ia", "ib", "ic"} {
		r := call(t, "PUT", ts.URL+"/v1/indexes/"+name, "admin-token",
			strings.NewReader(`{"table_bucket":"24h","partition_bucket":"1h","retention":"168h"}`))
		if r.status != 201 {
			t.Fatalf("create index %s: %d %s", name, r.status, r.body)
		}
	}
	return ts.URL
}

func startMigration(t *testing.T, url, index, token, legacy string) response {
	t.Helper()
	return call(t, "PUT", url+"/v1/indexes/"+index+"/migration", token,
		strings.NewReader(`{"legacy":`+legacy+`,"write_legacy":true}`))
}

func importLegacy(t *testing.T, url, index, token, eventID string) response {
	t.Helper()
	ts := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	return call(t, "POST", url+"/v1/indexes/"+index+"/migration/legacy-rows", token,
		strings.NewReader(`{"rows":[{"index_id":"acct","event_id":"`+eventID+`","timestamp":"`+ts+`","payload":"c2VjcmV0"}]}`))
}

// TestMigrationLegacyTableBelongsToIndex: an embedded legacy table is
// named in one namespace shared by every index, so a token scoped to one
// index may start a migration only from that index's own legacy table,
// NAME_legacy; another one (another tenant's, or one it would plant for
// another tenant to pick up later) needs the admin scope, and so does an
// import into a legacy source the index does not own.
func TestMigrationLegacyTableBelongsToIndex(t *testing.T) {
	url := migrationServer(t)
	own := func(name string) string { return `{"kind":"table","table":"` + name + `"}` }

	// Tenant B migrates from its own legacy table and imports a row.
	if r := startMigration(t, url, "ib", "ib-token", own("ib_legacy")); r.status != 201 {
		t.Fatalf("ib from ib_legacy: %d %s", r.status, r.body)
	}
	if r := importLegacy(t, url, "ib", "ib-token", "b_secret"); r.status != 200 {
		t.Fatalf("import into ib_legacy: %d %s", r.status, r.body)
	}

	// Tenant A may neither take B's table nor plant one under another
	// name; *:* reaches every index but no more legacy tables.
	for _, c := range []struct{ token, table string }{
		{"ia-token", "ib_legacy"}, {"ia-token", "shared_legacy"}, {"ia-token", "ic_legacy"},
		{"ia-token", "ia_legacy_x"}, {"all-token", "ib_legacy"},
	} {
		r := startMigration(t, url, "ia", c.token, own(c.table))
		if r.status != 403 || r.errorCode(t) != server.CodePermissionDenied {
			t.Errorf("%s: ia from %s: %d %s, want 403 permission_denied", c.token, c.table, r.status, r.body)
		}
	}
	// Nothing of B's is read through ia, and nothing was started.
	r := call(t, "GET", url+"/v1/indexes/ia/events?index_id=acct", "ia-token", nil)
	if strings.Contains(string(r.body), "b_secret") {
		t.Fatalf("ia's read returned tenant B's legacy event: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", url+"/v1/indexes/ia/migration", "ia-token", nil); r.status != 404 {
		t.Fatalf("ia's migration after the refusals: %d %s", r.status, r.body)
	}
	// An admin may start a migration from any table.
	if r := startMigration(t, url, "ic", "admin-token", own("shared_legacy")); r.status != 201 {
		t.Fatalf("admin: ic from shared_legacy: %d %s", r.status, r.body)
	}

	// The index's own table is the index token's to use; so is the
	// migration an admin started (status, phases), but importing into a
	// legacy table it does not own needs admin.
	if r := startMigration(t, url, "ia", "ia-token", own("ia_legacy")); r.status != 201 {
		t.Fatalf("ia from ia_legacy: %d %s", r.status, r.body)
	}
	if r := importLegacy(t, url, "ia", "ia-token", "a_own"); r.status != 200 {
		t.Fatalf("import into ia_legacy: %d %s", r.status, r.body)
	}
	if r := importLegacy(t, url, "ic", "ic-token", "c_planted"); r.status != 403 || r.errorCode(t) != server.CodePermissionDenied {
		t.Fatalf("ic-token importing into shared_legacy: %d %s, want 403", r.status, r.body)
	}
	if r := importLegacy(t, url, "ic", "admin-token", "c_admin"); r.status != 200 {
		t.Fatalf("admin importing into shared_legacy: %d %s", r.status, r.body)
	}
	// Settings of an admin-chosen source stay the admin's: the index
	// token cannot restart it with write_legacy.
	if r := startMigration(t, url, "ic", "ic-token", own("shared_legacy")); r.status != 403 {
		t.Fatalf("ic-token changing the settings of a migration from shared_legacy: %d %s, want 403", r.status, r.body)
	}
	if r := call(t, "POST", url+"/v1/indexes/ic/migration/phase", "ic-token", strings.NewReader(`{"phase":"shadow-read"}`)); r.status != 200 {
		t.Fatalf("ic-token moving its migration on: %d %s", r.status, r.body)
	}
	// B's data stayed B's: only its own event is in ib_legacy.
	r = call(t, "GET", url+"/v1/indexes/ib/events?index_id=acct", "ib-token", nil)
	if r.status != 200 || !strings.Contains(string(r.body), "b_secret") || strings.Contains(string(r.body), "a_own") {
		t.Fatalf("ib's read: %d %s", r.status, r.body)
	}
}

// countingListener accepts connections on a free loopback port, counts
// them and closes them at once, until the test ends.
func countingListener(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int32)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String(), accepted
}

// noAWSFromOutside keeps the AWS SDK off every metadata service and
// shared configuration: static credentials from the environment, or none
// at all when creds is false.
func noAWSFromOutside(t *testing.T, creds bool) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", "")
	key, secret := "", ""
	if creds {
		key, secret = "AKIDEXAMPLE", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
	}
	t.Setenv("AWS_ACCESS_KEY_ID", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
}

// TestMigrationRemoteLegacyNeedsAdmin: a DynamoDB or CQL legacy source is
// reached with the server's own credentials, from the server's network,
// at an endpoint the request may name, so only an admin token may name
// one; a token scoped to the index is refused before the server connects
// anywhere or runs the AWS credential chain.
func TestMigrationRemoteLegacyNeedsAdmin(t *testing.T) {
	noAWSFromOutside(t, true)
	addr, accepted := countingListener(t)
	// A DynamoDB client without an endpoint of its own would reach AWS:
	// here it reaches the listener instead.
	t.Setenv("AWS_ENDPOINT_URL", "http://"+addr)
	url := migrationServer(t)
	dynamo := func(endpoint string) string {
		return `{"kind":"dynamodb","table":"events_v1","endpoint":"` + endpoint + `","region":"us-east-1",` +
			`"mapping":{"index_id":"pk","sort_key":"sk","sort_key_format":"timestamp_event_id","payload":"body","ttl":"expires"}}`
	}
	cql := func(endpoint string) string {
		return `{"kind":"cql","table":"shop.events_v1","endpoint":"` + endpoint + `",` +
			`"mapping":{"index_id":"account","sort_key":"ts","event_id":"event_id","payload":"body"}}`
	}
	for _, token := range []string{"ia-token", "all-token"} {
		for name, legacy := range map[string]string{
			"dynamodb at an endpoint":     dynamo("http://" + addr),
			"dynamodb of the server's":    `{"kind":"dynamodb","table":"ib_legacy","mapping":{"index_id":"pk","sort_key":"sk","sort_key_format":"timestamp_event_id","payload":"body","ttl":"expires"}}`,
			"cql at an endpoint":          cql(addr),
			"cql of the server's cluster": `{"kind":"cql","table":"ebb.ib_123","mapping":{"index_id":"account","sort_key":"ts","event_id":"event_id","payload":"body"}}`,
		} {
			r := startMigration(t, url, "ia", token, legacy)
			if r.status != 403 || r.errorCode(t) != server.CodePermissionDenied {
				t.Errorf("%s, %s: %d %s, want 403 permission_denied", token, name, r.status, r.body)
			}
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the server connected %d times to %s for index-scoped tokens", n, addr)
	}
	// An admin may name an endpoint; this one closes every connection,
	// which is the legacy backend being unreachable.
	for name, legacy := range map[string]string{"dynamodb": dynamo("http://" + addr), "cql": cql(addr)} {
		r := startMigration(t, url, "ia", "admin-token", legacy)
		if r.status != 503 || r.errorCode(t) != server.CodeUnavailable {
			t.Errorf("admin, %s at a closing endpoint: %d %s, want 503 unavailable", name, r.status, r.body)
		}
	}
	if accepted.Load() == 0 {
		t.Fatalf("the admin's migrations never reached %s", addr)
	}
}

// TestMigrationWithoutLegacyOpener: a server whose DB has no opener of
// DynamoDB and CQL legacy tables refuses a migration off one as an
// invalid argument, before connecting anywhere, and still migrates an
// index off its own legacy table.
func TestMigrationWithoutLegacyOpener(t *testing.T) {
	noAWSFromOutside(t, true)
	addr, accepted := countingListener(t)
	url := migrationServerWith(t, nil)
	for name, legacy := range map[string]string{
		"dynamodb": `{"kind":"dynamodb","table":"events_v1","endpoint":"http://` + addr + `","region":"us-east-1",` +
			`"mapping":{"index_id":"pk","sort_key":"sk","sort_key_format":"timestamp_event_id","payload":"body","ttl":"expires"}}`,
		"cql": `{"kind":"cql","table":"shop.events_v1","endpoint":"` + addr + `",` +
			`"mapping":{"index_id":"account","sort_key":"ts","event_id":"event_id","payload":"body"}}`,
	} {
		r := startMigration(t, url, "ia", "admin-token", legacy)
		if r.status != 400 || r.errorCode(t) != server.CodeInvalidArgument || !strings.Contains(string(r.body), "opener") {
			t.Errorf("%s without an opener: %d %s, want 400 invalid_argument naming the missing opener", name, r.status, r.body)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the server connected %d times without an opener", n)
	}
	if r := startMigration(t, url, "ia", "admin-token", `{"kind":"table","table":"ia_legacy"}`); r.status != 201 {
		t.Fatalf("the index's own legacy table without an opener: %d %s, want 201", r.status, r.body)
	}
}

// TestMigrationLegacyCredentialsRefused: a legacy DynamoDB endpoint that
// refuses the server's credentials, or a server with no AWS credentials,
// is the legacy backend's failure as seen through the server: 502
// bad_gateway, not 500.
func TestMigrationLegacyCredentialsRefused(t *testing.T) {
	legacy := func(endpoint string) string {
		return `{"kind":"dynamodb","table":"events_v1","endpoint":"` + endpoint + `","region":"us-east-1",` +
			`"mapping":{"index_id":"pk","sort_key":"sk","sort_key_format":"timestamp_event_id","payload":"body","ttl":"expires"}}`
	}
	t.Run("refused", func(t *testing.T) {
		noAWSFromOutside(t, true)
		var calls atomic.Int32
		// What DynamoDB answers a request signed with an unknown key.
		upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("Connection", "close")
			body := []byte(`{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token included in the request is invalid."}`)
			w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(body)
		}))
		t.Cleanup(upstream.Close)
		url := migrationServer(t)
		r := startMigration(t, url, "ia", "admin-token", legacy(upstream.URL))
		if r.status != 502 || r.errorCode(t) != server.CodeBadGateway || !strings.Contains(string(r.body), "credentials") {
			t.Fatalf("credentials refused by the legacy endpoint: %d %s, want 502 bad_gateway", r.status, r.body)
		}
		if calls.Load() == 0 {
			t.Fatal("the legacy endpoint was never asked")
		}
	})
	t.Run("cql", func(t *testing.T) {
		// A CQL node whose cluster requires a password: it answers the
		// session's STARTUP with AUTHENTICATE, and the session has none.
		addr := cqlAuthRequired(t)
		url := migrationServer(t)
		r := startMigration(t, url, "ia", "admin-token", `{"kind":"cql","table":"shop.events_v1","endpoint":"`+addr+`",`+
			`"mapping":{"index_id":"account","sort_key":"ts","event_id":"event_id","payload":"body"}}`)
		if r.status != 502 || r.errorCode(t) != server.CodeBadGateway || !strings.Contains(string(r.body), "authentication required") {
			t.Fatalf("a CQL cluster asking for credentials: %d %s, want 502 bad_gateway", r.status, r.body)
		}
	})
	t.Run("none", func(t *testing.T) {
		noAWSFromOutside(t, false)
		addr, accepted := countingListener(t)
		url := migrationServer(t)
		r := startMigration(t, url, "ia", "admin-token", legacy("http://"+addr))
		if r.status != 502 || r.errorCode(t) != server.CodeBadGateway || !strings.Contains(string(r.body), "credentials") {
			t.Fatalf("no AWS credentials for the legacy table: %d %s, want 502 bad_gateway", r.status, r.body)
		}
		if n := accepted.Load(); n != 0 {
			t.Fatalf("the server connected %d times without credentials", n)
		}
	})
}

// cqlAuthRequired serves the start of the CQL native protocol on a free
// loopback port, as a node requiring password authentication does: OPTIONS
// is answered SUPPORTED, STARTUP is answered AUTHENTICATE, and the
// connection then waits for a response the driver never sends.
func cqlAuthRequired(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		conns sync.WaitGroup
		mu    sync.Mutex
		open  []net.Conn
	)
	serve := func(c net.Conn) {
		defer conns.Done()
		defer c.Close()
		for {
			head := make([]byte, 9) // version, flags, stream (2), opcode, length (4)
			if _, err := io.ReadFull(c, head); err != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(head[5:]))); err != nil {
				return
			}
			var op byte
			var body []byte
			switch head[4] {
			case 0x05: // OPTIONS: SUPPORTED, with no options
				op, body = 0x06, []byte{0, 0}
			case 0x01: // STARTUP: AUTHENTICATE with the authenticator's class
				class := "org.apache.cassandra.auth.PasswordAuthenticator"
				op, body = 0x03, append(binary.BigEndian.AppendUint16(nil, uint16(len(class))), class...)
			default:
				return
			}
			out := []byte{head[0] | 0x80, 0, head[2], head[3], op}
			out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
			if _, err := c.Write(append(out, body...)); err != nil {
				return
			}
		}
	}
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			conns.Add(1)
			go serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-accepting
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	return ln.Addr().String()
}

package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/storetest"
)

// listsServer is a server with the lists feature over a real store whose
// clock the test drives.
type listsServer struct {
	url   string
	clock *storetest.Clock
}

var listsStart = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func startLists(t *testing.T, auth *server.Auth) *listsServer {
	t.Helper()
	clock := storetest.NewClock(listsStart)
	st := testbackend.Pebble(t, clock.Now)
	svc, err := lists.New(context.Background(), st, lists.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := start(t, server.Options{Admin: adminFor(t, st, clock.Now), Auth: auth, Now: clock.Now, Features: []server.Feature{server.Lists(svc)}})
	return &listsServer{url: ts.URL, clock: clock}
}

// listSeg escapes a name for one path segment, dot segments included: a
// literal "." or ".." would be resolved away by path cleaning.
func listSeg(s string) string {
	if s == "." || s == ".." {
		return strings.ReplaceAll(s, ".", "%2E")
	}
	return url.PathEscape(s)
}

func listFeaturePath(entityType, feature, version string) string {
	return "/v1/list-features/" + listSeg(entityType) + "/" + listSeg(feature) + "/" + listSeg(version)
}

func listItemsPath(entityType, feature, version, entity string) string {
	return "/v1/lists/" + listSeg(entityType) + "/" + listSeg(feature) + "/" + listSeg(version) + "/" + listSeg(entity) + "/items"
}

// do sends a request with a body (a string as is, anything else as JSON;
// nil: none).
func (e *listsServer) do(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return call(t, method, e.url+path, token, nil)
	case string:
		return call(t, method, e.url+path, token, strings.NewReader(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return call(t, method, e.url+path, token, bytes.NewReader(data))
	}
}

func listsExpect(t *testing.T, what string, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d (%s), want %d", what, r.status, r.body, status)
	}
	if code != "" {
		if got := r.errorCode(t); got != code {
			t.Fatalf("%s: code %q, want %q", what, got, code)
		}
	}
}

type listItemBody struct {
	Value     string `json:"value"`
	Timestamp string `json:"timestamp"`
}

type listItemsBody struct {
	Items []listItemBody `json:"items"`
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func listsDecode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("status %d body %q: %v", r.status, r.body, err)
	}
	return v
}

// getList reads a list and returns its items as "value@timestamp".
func (e *listsServer) getList(t *testing.T, path, query string) []string {
	t.Helper()
	return e.getListAs(t, path, query, "")
}

// getListAs is getList with a token.
func (e *listsServer) getListAs(t *testing.T, path, query, token string) []string {
	t.Helper()
	r := call(t, "GET", e.url+path+query, token, nil)
	listsExpect(t, "get "+path+query, r, http.StatusOK, "")
	body := listsDecode[listItemsBody](t, r)
	if body.Items == nil {
		t.Fatalf("get %s: items is not an array: %s", path, r.body)
	}
	var out []string
	for _, it := range body.Items {
		v, err := base64.StdEncoding.DecodeString(it.Value)
		if err != nil {
			t.Fatalf("value %q: %v", it.Value, err)
		}
		out = append(out, string(v)+"@"+it.Timestamp)
	}
	return out
}

func TestListsAPI(t *testing.T) {
	e := startLists(t, nil)
	fp := listFeaturePath("user", "stories", "_")
	ip := listItemsPath("user", "stories", "_", "alice")

	// Features: 201 created, 200 identical, 200 changed.
	r := e.do(t, "PUT", fp, "", `{"ttl":"720h"}`)
	listsExpect(t, "create", r, http.StatusCreated, "")
	f := listsDecode[map[string]string](t, r)
	if f["entity_type"] != "user" || f["feature"] != "stories" || f["version"] != "" || f["ttl"] != "720h" {
		t.Fatalf("created feature %s", r.body)
	}
	listsExpect(t, "identical create", e.do(t, "PUT", fp, "", `{"ttl":"720h0m0s"}`), http.StatusOK, "")
	r = e.do(t, "PUT", fp, "", `{"ttl":"1h"}`)
	listsExpect(t, "changed ttl", r, http.StatusOK, "")
	if f := listsDecode[map[string]string](t, r); f["ttl"] != "1h" {
		t.Fatalf("feature after the ttl change %s", r.body)
	}
	if f := listsDecode[map[string]string](t, e.do(t, "GET", fp, "", nil)); f["ttl"] != "1h" {
		t.Fatalf("feature read after the ttl change: %v", f)
	}
	listsExpect(t, "changed back", e.do(t, "PUT", fp, "", `{"ttl":"720h"}`), http.StatusOK, "")
	listsExpect(t, "get feature", e.do(t, "GET", fp, "", nil), http.StatusOK, "")
	for name, body := range map[string]string{
		"no ttl": `{}`, "bad ttl": `{"ttl":"soon"}`, "negative ttl": `{"ttl":"-1h"}`, "zero ttl": `{"ttl":"0s"}`,
		"unknown field": `{"ttl":"1h","x":1}`, "not json": `ttl=1h`,
	} {
		listsExpect(t, name, e.do(t, "PUT", listFeaturePath("user", "other", "_"), "", body), http.StatusBadRequest, "invalid_argument")
	}

	// Add: an expired item is skipped and counted.
	t0 := listsStart.Add(-time.Hour)
	r = e.do(t, "POST", ip, "", listItemsBody{Items: []listItemBody{
		{b64("s1"), t0.Format(time.RFC3339Nano)},
		{b64("s2"), t0.Add(time.Minute).Format(time.RFC3339Nano)},
		{b64("s3"), "2026-11-22T09:30:00.123456789Z"},
		{b64("ancient"), "2020-01-01T00:00:00Z"},
	}})
	listsExpect(t, "add", r, http.StatusOK, "")
	if got := strings.TrimSpace(string(r.body)); got != `{"skipped_expired":1,"written":3}` {
		t.Fatalf("add answered %s", got)
	}
	got := e.getList(t, ip, "")
	want := []string{"s3@2026-11-22T09:30:00.123456789Z", "s2@2026-11-22T09:01:00Z", "s1@2026-11-22T09:00:00Z"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("list %v, want %v", got, want)
	}
	if got := e.getList(t, ip, "?limit=1"); fmt.Sprint(got) != fmt.Sprint(want[:1]) {
		t.Fatalf("limit 1: %v", got)
	}
	if got := e.getList(t, ip, "?min_timestamp=2026-11-22T09:01:00Z"); fmt.Sprint(got) != fmt.Sprint(want[:2]) {
		t.Fatalf("min_timestamp (inclusive): %v", got)
	}
	if got := e.getList(t, listItemsPath("user", "stories", "_", "bob"), ""); len(got) != 0 {
		t.Fatalf("bob's list: %v", got)
	}
	// Expiry is exact: at s1's timestamp + TTL it is gone.
	e.clock.Set(t0.Add(720 * time.Hour))
	if got := e.getList(t, ip, ""); fmt.Sprint(got) != fmt.Sprint(want[:2]) {
		t.Fatalf("after s1 expired: %v", got)
	}
	e.clock.Set(listsStart)

	// Remove by value, then the whole list.
	listsExpect(t, "remove by value", e.do(t, "DELETE", ip+"?value="+url.QueryEscape(b64("s2")), "", nil), http.StatusNoContent, "")
	if got := e.getList(t, ip, ""); fmt.Sprint(got) != fmt.Sprint([]string{want[0], want[2]}) {
		t.Fatalf("after remove by value: %v", got)
	}
	listsExpect(t, "remove all", e.do(t, "DELETE", ip, "", nil), http.StatusNoContent, "")
	if got := e.getList(t, ip, ""); len(got) != 0 {
		t.Fatalf("after remove all: %v", got)
	}

	// Deleting the version takes every list with it.
	e.do(t, "POST", ip, "", listItemsBody{Items: []listItemBody{{b64("x"), t0.Format(time.RFC3339)}}})
	listsExpect(t, "delete feature", e.do(t, "DELETE", fp, "", nil), http.StatusNoContent, "")
	listsExpect(t, "get after delete", e.do(t, "GET", ip, "", nil), http.StatusNotFound, "not_found")
	listsExpect(t, "delete again", e.do(t, "DELETE", fp, "", nil), http.StatusNoContent, "")
	listsExpect(t, "re-create", e.do(t, "PUT", fp, "", `{"ttl":"1h"}`), http.StatusCreated, "")
	if got := e.getList(t, ip, ""); len(got) != 0 {
		t.Fatalf("re-created version holds %v", got)
	}
}

func TestListsAPIRefusals(t *testing.T) {
	e := startLists(t, nil)
	listsExpect(t, "create", e.do(t, "PUT", listFeaturePath("user", "stories", "v1"), "", `{"ttl":"24h"}`), http.StatusCreated, "")
	ip := listItemsPath("user", "stories", "v1", "alice")
	ts := listsStart.Format(time.RFC3339)
	item := listItemBody{b64("ok"), ts}

	unknown := listItemsPath("user", "nope", "v1", "alice")
	listsExpect(t, "add to unknown feature", e.do(t, "POST", unknown, "", listItemsBody{Items: []listItemBody{item}}), http.StatusNotFound, "not_found")
	listsExpect(t, "get unknown feature", e.do(t, "GET", unknown, "", nil), http.StatusNotFound, "not_found")
	listsExpect(t, "remove from unknown feature", e.do(t, "DELETE", unknown, "", nil), http.StatusNotFound, "not_found")
	listsExpect(t, "unknown version", e.do(t, "GET", listItemsPath("user", "stories", "_", "alice"), "", nil), http.StatusNotFound, "not_found")

	many := make([]listItemBody, lists.MaxItemsPerAdd+1)
	for i := range many {
		many[i] = listItemBody{b64(fmt.Sprint(i)), ts}
	}
	listsExpect(t, "too many items", e.do(t, "POST", ip, "", listItemsBody{Items: many}), http.StatusBadRequest, "invalid_argument")
	big := base64.StdEncoding.EncodeToString(make([]byte, lists.MaxValueBytes+1))
	r := e.do(t, "POST", ip, "", listItemsBody{Items: []listItemBody{item, {big, ts}}})
	listsExpect(t, "oversize value", r, http.StatusRequestEntityTooLarge, "too_large")
	if !bytes.Contains(r.body, []byte("item 1")) {
		t.Fatalf("oversize value: message does not name item 1: %s", r.body)
	}
	for name, body := range map[string]string{
		"bad base64":        `{"items":[{"value":"ok","timestamp":"2026-11-22T10:00:00Z"},{"value":"!!","timestamp":"2026-11-22T10:00:00Z"}]}`,
		"missing timestamp": `{"items":[{"value":"b2s="}]}`,
		"missing value":     `{"items":[{"timestamp":"2026-11-22T10:00:00Z"}]}`,
		"bad timestamp":     `{"items":[{"value":"b2s=","timestamp":"yesterday"}]}`,
		"before 1970":       `{"items":[{"value":"b2s=","timestamp":"1969-12-31T23:59:59Z"}]}`,
		"no items":          `{}`,
		"unknown field":     `{"items":[],"x":1}`,
	} {
		listsExpect(t, name, e.do(t, "POST", ip, "", body), http.StatusBadRequest, "invalid_argument")
	}
	for _, q := range []string{"?limit=0", "?limit=10001", "?limit=x", "?min_timestamp=soon"} {
		listsExpect(t, "get "+q, e.do(t, "GET", ip+q, "", nil), http.StatusBadRequest, "invalid_argument")
	}
	listsExpect(t, "remove bad value", e.do(t, "DELETE", ip+"?value=%21%21", "", nil), http.StatusBadRequest, "invalid_argument")
	// Nothing of any refused request was written.
	if got := e.getList(t, ip, ""); len(got) != 0 {
		t.Fatalf("refused requests wrote %v", got)
	}
	// An unescaped '+' in the value (a space once decoded) still names it.
	plus := string([]byte{0xfb, 0xef}) // base64 "++8="
	e.do(t, "POST", ip, "", listItemsBody{Items: []listItemBody{{base64.StdEncoding.EncodeToString([]byte(plus)), ts}}})
	listsExpect(t, "remove with raw +", e.do(t, "DELETE", ip+"?value=++8=", "", nil), http.StatusNoContent, "")
	if got := e.getList(t, ip, ""); len(got) != 0 {
		t.Fatalf("item with value ++8= survived: %v", got)
	}
}

// TestListsAPIEscaping checks that escaped path segments keep any
// character, '/' included, inside their segment, so that different
// (entity type, feature, version, entity) tuples never meet.
func TestListsAPIEscaping(t *testing.T) {
	e := startLists(t, nil)
	type tuple struct{ et, f, v, id string }
	tuples := []tuple{
		{"a/b", "c", "_", "x"},
		{"a", "b/c", "_", "x"},
		{"a#b", "c|d", "v/1", "x/y"},
		{"a", "b#c|d", "v", "1/x/y"},
		{"a b", "c%2Fd", "%", "x\x00y"},
		{"é", "f", ".", "."},
		{"é", "f", "..", ".."},
		{"a", "b", "_", "x#frag?q=1"},
	}
	for i, tu := range tuples {
		fp := listFeaturePath(tu.et, tu.f, tu.v)
		r := e.do(t, "PUT", fp, "", `{"ttl":"24h"}`)
		if r.status != http.StatusCreated && r.status != http.StatusOK {
			t.Fatalf("create %q: %d %s", tu, r.status, r.body)
		}
		f := listsDecode[map[string]string](t, r)
		wantVersion := tu.v
		if wantVersion == "_" {
			wantVersion = ""
		}
		if f["entity_type"] != tu.et || f["feature"] != tu.f || f["version"] != wantVersion {
			t.Fatalf("create %q answered %s", tu, r.body)
		}
		r = e.do(t, "POST", listItemsPath(tu.et, tu.f, tu.v, tu.id), "", listItemsBody{Items: []listItemBody{{b64(fmt.Sprint(i)), listsStart.Format(time.RFC3339)}}})
		listsExpect(t, fmt.Sprintf("add to %q", tu), r, http.StatusOK, "")
	}
	for i, tu := range tuples {
		got := e.getList(t, listItemsPath(tu.et, tu.f, tu.v, tu.id), "")
		if want := fmt.Sprintf("[%d@%s]", i, listsStart.Format(time.RFC3339Nano)); fmt.Sprint(got) != want {
			t.Errorf("list %q holds %v, want %s", tu, got, want)
		}
	}
}

func TestListsAPIAuth(t *testing.T) {
	e := startLists(t, loadAuth(t, `tokens:
  - token: users
    scopes: ["list:user"]
  - token: slashy
    scopes: ["list:a/b"]
`))
	fp := listFeaturePath("user", "stories", "_")
	listsExpect(t, "no token", e.do(t, "PUT", fp, "", `{"ttl":"1h"}`), http.StatusUnauthorized, "unauthenticated")
	listsExpect(t, "wrong scope", e.do(t, "PUT", fp, "slashy", `{"ttl":"1h"}`), http.StatusForbidden, "permission_denied")
	listsExpect(t, "scoped create", e.do(t, "PUT", fp, "users", `{"ttl":"1h"}`), http.StatusCreated, "")
	listsExpect(t, "scoped read", e.do(t, "GET", listItemsPath("user", "stories", "_", "alice"), "users", nil), http.StatusOK, "")
	// The scope names the unescaped entity type.
	listsExpect(t, "escaped entity type", e.do(t, "PUT", listFeaturePath("a/b", "f", "_"), "slashy", `{"ttl":"1h"}`), http.StatusCreated, "")
	// A 403 says nothing about existence: a missing feature of another
	// entity type is refused like an existing one.
	listsExpect(t, "other entity type", e.do(t, "GET", listItemsPath("a/b", "nope", "_", "x"), "users", nil), http.StatusForbidden, "permission_denied")
}

package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestListsMaxItemsCountDeleteFeature: max_items is set, shown and
// changed through PUT; an add beyond it answers what it trimmed; a
// list's count; deleting a whole feature takes every version. The same
// on the main and the hot listener.
func TestListsMaxItemsCountDeleteFeature(t *testing.T) {
	l := serveBoth(t, 5*time.Second)
	for _, listener := range []struct{ name, url string }{{"main", l.main}, {"hot", l.srv.HotURL()}} {
		t.Run(listener.name, func(t *testing.T) {
			e := &listsServer{url: listener.url}
			feature := "capped_" + listener.name
			fp := listFeaturePath("user", feature, "_")
			ip := listItemsPath("user", feature, "_", "alice")

			r := e.do(t, "PUT", fp, "", `{"ttl":"720h","max_items":3}`)
			listsExpect(t, "create with max_items", r, http.StatusCreated, "")
			if f := listsDecode[map[string]any](t, r); f["max_items"] != 3.0 {
				t.Fatalf("created feature %s", r.body)
			}
			listsExpect(t, "identical create", e.do(t, "PUT", fp, "", `{"ttl":"720h","max_items":3}`), http.StatusOK, "")
			// Without max_items the cap is kept.
			r = e.do(t, "PUT", fp, "", `{"ttl":"720h"}`)
			listsExpect(t, "create without max_items", r, http.StatusOK, "")
			if f := listsDecode[map[string]any](t, r); f["max_items"] != 3.0 {
				t.Fatalf("feature after a create without max_items: %s", r.body)
			}
			for _, body := range []string{`{"ttl":"720h","max_items":-1}`, `{"ttl":"720h","max_items":10001}`, `{"ttl":"720h","max_items":"3"}`, `{"ttl":"720h","max_items":1.5}`} {
				listsExpect(t, body, e.do(t, "PUT", fp, "", body), http.StatusBadRequest, "invalid_argument")
			}

			now := time.Now().UTC().Add(-time.Minute)
			var items []listItemBody
			for i := range 5 {
				items = append(items, listItemBody{b64(fmt.Sprint("s", i)), now.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)})
			}
			r = e.do(t, "POST", ip, "", listItemsBody{Items: items})
			listsExpect(t, "add beyond the cap", r, http.StatusOK, "")
			if got := strings.TrimSpace(string(r.body)); got != `{"skipped_expired":0,"trimmed":2,"written":5}` {
				t.Fatalf("add answered %s", got)
			}
			if got := e.getList(t, ip, ""); len(got) != 3 || !strings.HasPrefix(got[0], "s4@") || !strings.HasPrefix(got[2], "s2@") {
				t.Fatalf("list after the add: %v", got)
			}
			r = e.do(t, "GET", ip+"/count", "", nil)
			listsExpect(t, "count", r, http.StatusOK, "")
			if got := strings.TrimSpace(string(r.body)); got != `{"count":3}` {
				t.Fatalf("count answered %s", got)
			}
			r = e.do(t, "GET", listItemsPath("user", feature, "_", "bob")+"/count", "", nil)
			if got := strings.TrimSpace(string(r.body)); r.status != http.StatusOK || got != `{"count":0}` {
				t.Fatalf("count of a list never written: %d %s", r.status, got)
			}
			listsExpect(t, "count of an unknown feature", e.do(t, "GET", listItemsPath("user", "nope", "_", "bob")+"/count", "", nil), http.StatusNotFound, "not_found")
			listsExpect(t, "count with a parameter", e.do(t, "GET", ip+"/count?limit=1", "", nil), http.StatusBadRequest, "invalid_argument")

			// The cap changes in place: lowered, the next add trims to it.
			r = e.do(t, "PUT", fp, "", `{"ttl":"720h","max_items":1}`)
			listsExpect(t, "lower the cap", r, http.StatusOK, "")
			if f := listsDecode[map[string]any](t, r); f["max_items"] != 1.0 {
				t.Fatalf("feature after lowering the cap: %s", r.body)
			}
			r = e.do(t, "GET", fp, "", nil)
			if f := listsDecode[map[string]any](t, r); f["max_items"] != 1.0 {
				t.Fatalf("get feature after lowering the cap: %s", r.body)
			}
			r = e.do(t, "POST", ip, "", listItemsBody{Items: []listItemBody{{b64("s9"), now.Add(9 * time.Second).Format(time.RFC3339Nano)}}})
			if got := strings.TrimSpace(string(r.body)); got != `{"skipped_expired":0,"trimmed":3,"written":1}` {
				t.Fatalf("add after lowering the cap answered %d %s", r.status, got)
			}

			// A whole feature: every version goes, then again is 204.
			for _, v := range []string{"v2", "v3"} {
				listsExpect(t, "create "+v, e.do(t, "PUT", listFeaturePath("user", feature, v), "", `{"ttl":"1h"}`), http.StatusCreated, "")
			}
			whole := "/v1/list-features/user/" + feature
			listsExpect(t, "delete the feature", e.do(t, "DELETE", whole, "", nil), http.StatusNoContent, "")
			for _, v := range []string{"_", "v2", "v3"} {
				listsExpect(t, "version "+v+" after the delete", e.do(t, "GET", listFeaturePath("user", feature, v), "", nil), http.StatusNotFound, "not_found")
			}
			listsExpect(t, "delete the feature again", e.do(t, "DELETE", whole, "", nil), http.StatusNoContent, "")
			r = e.do(t, "GET", "/v1/list-features/user", "", nil)
			if strings.Contains(string(r.body), `"feature":"`+feature+`"`) {
				t.Fatalf("features after the delete: %s", r.body)
			}
		})
	}
}

package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/server"
)

// followPages reads every page of a listing at path (which carries its own
// query, limit=10000 included), handing each page's body to read, which
// returns the page's item count, the bytes of data the items hold and the
// next page token. It checks that no page holds more than MaxPageBytes plus
// one item of at most maxItem bytes, and returns how many pages it took.
func followPages(t *testing.T, base, path string, maxItem int, read func([]byte) (n, size int, next string)) (pages, items int) {
	t.Helper()
	token := ""
	for {
		p := path
		if token != "" {
			p += "&page_token=" + url.QueryEscape(token)
		}
		r := call(t, "GET", base+p, "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.status, r.body)
		}
		n, size, next := read(r.body)
		pages++
		items += n
		if size > server.MaxPageBytes+maxItem {
			t.Fatalf("page %d holds %d bytes of data, more than MaxPageBytes (%d) and one item (%d)", pages, size, server.MaxPageBytes, maxItem)
		}
		if next == "" {
			return pages, items
		}
		if pages > 1000 {
			t.Fatal("more than 1000 pages")
		}
		token = next
	}
}

// TestPageBytesAreBounded: a page asked for 10000 items of large events,
// list values or shared-table attributes ends at MaxPageBytes with a token,
// and following the tokens returns every item exactly once, in order.
func TestPageBytesAreBounded(t *testing.T) {
	t.Run("events", func(t *testing.T) {
		base, _, _ := indexServer(t)
		decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
		const n, size = 14, 1 << 20
		now := time.Now().UTC().Truncate(time.Millisecond)
		for i := 0; i < n; i += 2 {
			var batch []eventBody
			for j := i; j < i+2; j++ {
				batch = append(batch, eventBody{IndexID: "big", EventID: fmt.Sprintf("e%02d", j),
					Timestamp: now.Add(-time.Duration(n-j) * time.Second).Format(time.RFC3339Nano),
					Payload:   bytes.Repeat([]byte{byte(j)}, size)})
			}
			decode(t, postEvents(t, base, batch), http.StatusOK, nil)
		}
		var got []string
		pages, items := followPages(t, base, "/v1/indexes/ev/events?index_id=big&limit=10000", size+8, func(b []byte) (int, int, string) {
			var p eventsPage
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, e := range p.Events {
				total += len(e.Payload) + len(e.IndexID) + len(e.EventID)
				if len(e.Payload) != size || e.Payload[0] != byte(len(got)) {
					t.Fatalf("event %s: payload of %d bytes starting %d", e.EventID, len(e.Payload), e.Payload[0])
				}
				got = append(got, e.EventID)
			}
			if p.NextPageToken == nil {
				return len(p.Events), total, ""
			}
			return len(p.Events), total, *p.NextPageToken
		})
		if items != n || pages < 4 {
			t.Fatalf("%d events in %d pages (%v), want %d in at least 4", items, pages, got, n)
		}
	})

	t.Run("lists", func(t *testing.T) {
		srv := startLists(t, nil)
		if r := srv.do(t, "PUT", listFeaturePath("user", "big", "_"), "", map[string]string{"ttl": "720h"}); r.status != http.StatusCreated {
			t.Fatalf("create feature: %d %s", r.status, r.body)
		}
		const n, size = 150, 64 << 10
		for i := 0; i < n; i += 50 {
			var items []map[string]string
			for j := i; j < i+50; j++ {
				v := bytes.Repeat([]byte{byte(j)}, size)
				items = append(items, map[string]string{"value": b64(string(v)),
					"timestamp": listsStart.Add(time.Duration(j) * time.Second).Format(time.RFC3339)})
			}
			if r := srv.do(t, "POST", listItemsPath("user", "big", "_", "u1"), "", map[string]any{"items": items}); r.status != http.StatusOK {
				t.Fatalf("add: %d %s", r.status, r.body)
			}
		}
		next := n - 1 // newest first
		pages, items := followPages(t, srv.url, listItemsPath("user", "big", "_", "u1")+"?limit=10000", size, func(b []byte) (int, int, string) {
			var p struct {
				Items []struct {
					Value []byte `json:"value"`
				} `json:"items"`
				NextPageToken string `json:"next_page_token"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, it := range p.Items {
				if len(it.Value) != size || it.Value[0] != byte(next) {
					t.Fatalf("item %d: value of %d bytes starting %d", next, len(it.Value), it.Value[0])
				}
				total += len(it.Value)
				next--
			}
			return len(p.Items), total, p.NextPageToken
		})
		if items != n || pages < 3 {
			t.Fatalf("%d items in %d pages, want %d in at least 3", items, pages, n)
		}
	})

	t.Run("tables", func(t *testing.T) {
		srv := startTables(t, nil)
		if r := srv.do(t, "PUT", "/v1/tables/big", "", `{}`); r.status != http.StatusCreated {
			t.Fatalf("create table: %d %s", r.status, r.body)
		}
		const n, size = 40, 250 << 10
		base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		for i := range n {
			attrs := fmt.Sprintf(`{"a":%q}`, strings.Repeat(string(rune('a'+i%26)), size))
			body := fmt.Sprintf(`{"timestamp":%q,"attributes":%s}`, base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), attrs)
			if r := srv.do(t, "PUT", fmt.Sprintf("/v1/tables/big/items/k%02d", i), "", body); r.status != http.StatusOK {
				t.Fatalf("put: %d %s", r.status, r.body)
			}
		}
		next := 0
		pages, items := followPages(t, srv.url, "/v1/tables/big/items?limit=10000", size+16, func(b []byte) (int, int, string) {
			var p struct {
				Items []struct {
					Key        string          `json:"key"`
					Attributes json.RawMessage `json:"attributes"`
				} `json:"items"`
				NextPageToken string `json:"next_page_token"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, it := range p.Items {
				if want := fmt.Sprintf("k%02d", next); it.Key != want {
					t.Fatalf("item %q, want %q", it.Key, want)
				}
				total += len(it.Key) + len(it.Attributes)
				next++
			}
			return len(p.Items), total, p.NextPageToken
		})
		if items != n || pages < 3 {
			t.Fatalf("%d items in %d pages, want %d in at least 3", items, pages, n)
		}
		// Small items still come in one page of the size asked for.
		for i := range 300 {
			body := fmt.Sprintf(`{"timestamp":%q,"attributes":{"i":%d}}`, base.Add(time.Hour+time.Duration(i)*time.Second).Format(time.RFC3339), i)
			if r := srv.do(t, "PUT", fmt.Sprintf("/v1/tables/big/items/s%03d", i), "", body); r.status != http.StatusOK {
				t.Fatalf("put: %d %s", r.status, r.body)
			}
		}
		r := call(t, "GET", srv.url+"/v1/tables/big/items?limit=300&after="+url.QueryEscape(base.Add(time.Hour-time.Second).Format(time.RFC3339)), "", nil)
		var p struct {
			Items         []json.RawMessage `json:"items"`
			NextPageToken string            `json:"next_page_token"`
		}
		decode(t, r, http.StatusOK, &p)
		if len(p.Items) != 300 || p.NextPageToken != "" {
			t.Fatalf("%d small items and token %q, want 300 and none", len(p.Items), p.NextPageToken)
		}
	})
}

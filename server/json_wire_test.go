package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// The list-items and events bodies are written by hand-rolled encoders;
// decoding them and encoding them again with encoding/json must give the
// same bytes, so the wire format is exactly what json.Marshal would send.

type wireItems struct {
	Items []struct {
		Value     []byte `json:"value"`
		Timestamp string `json:"timestamp"`
	} `json:"items"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

type wireEvents struct {
	Events []struct {
		IndexID   string `json:"index_id"`
		EventID   string `json:"event_id"`
		Timestamp string `json:"timestamp"`
		Payload   []byte `json:"payload"`
	} `json:"events"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

// sameAsMarshal decodes r's body into a T and checks that json.Marshal of
// it, plus a newline, is the body, and that the body went out with its
// Content-Length.
func sameAsMarshal[T any](t *testing.T, what string, r response) T {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", what, r.status, r.body)
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, r.body)
	}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.body) != string(want)+"\n" {
		t.Fatalf("%s: body\n%s\nis not what json.Marshal writes:\n%s", what, r.body, want)
	}
	if cl := r.header.Get("Content-Length"); cl != strconv.Itoa(len(r.body)) {
		t.Fatalf("%s: Content-Length %q for %d bytes", what, cl, len(r.body))
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q", what, ct)
	}
	return v
}

func TestListItemsWireFormat(t *testing.T) {
	e := startLists(t, nil)
	listsExpect(t, "put feature", e.do(t, "PUT", listFeaturePath("user", "f", "_"), "", `{"ttl":"720h"}`), http.StatusCreated, "")
	path := listItemsPath("user", "f", "_", "u-1")
	body := `{"items":[` +
		`{"value":"AAH/","timestamp":"2026-11-22T09:59:00.123Z"},` +
		`{"value":"","timestamp":"2026-11-22T09:58:00Z"},` +
		`{"value":"c3Rvcnk=","timestamp":"2026-11-22T09:57:00.000000001+01:00"}]}`
	listsExpect(t, "add", e.do(t, "POST", path, "", body), http.StatusOK, "")
	got := sameAsMarshal[wireItems](t, "get", e.do(t, "GET", path, "", nil))
	if len(got.Items) != 3 || got.Items[1].Value == nil || len(got.Items[1].Value) != 0 {
		t.Fatalf("items %+v", got.Items)
	}
	if ts := got.Items[2].Timestamp; ts != "2026-11-22T08:57:00.000000001Z" {
		t.Fatalf("timestamp %s", ts)
	}
	empty := sameAsMarshal[wireItems](t, "get none", e.do(t, "GET", path+"?min_timestamp=2026-11-22T10:00:00Z", "", nil))
	if empty.Items == nil || len(empty.Items) != 0 || empty.NextPageToken != "" {
		t.Fatalf("items %+v, want an empty array", empty.Items)
	}
	// Pages: a full page carries the token of the next.
	page := sameAsMarshal[wireItems](t, "page 1", e.do(t, "GET", path+"?limit=2", "", nil))
	if len(page.Items) != 2 || page.NextPageToken == "" || page.Items[0].Timestamp != got.Items[0].Timestamp {
		t.Fatalf("page 1: %+v", page)
	}
	rest := sameAsMarshal[wireItems](t, "page 2", e.do(t, "GET", path+"?limit=2&page_token="+page.NextPageToken, "", nil))
	if len(rest.Items) != 1 || rest.NextPageToken != "" || rest.Items[0].Timestamp != got.Items[2].Timestamp {
		t.Fatalf("page 2: %+v", rest)
	}
	listsExpect(t, "bad token", e.do(t, "GET", path+"?page_token=nope", "", nil), http.StatusBadRequest, "invalid_argument")
}

func TestEventsWireFormat(t *testing.T) {
	base, _, _ := indexServer(t)
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	id := "acc <&> \"q\" \\ \u2028 é \x01"
	var events []eventBody
	for i := range 5 {
		e := eventBody{IndexID: id, EventID: fmt.Sprintf("e%d/\x00\t", i), Timestamp: now.Add(-time.Duration(i) * time.Minute).Format(time.RFC3339Nano)}
		if i%2 == 0 {
			e.Payload = []byte{byte(i), 0, 255}
		}
		events = append(events, e)
	}
	decode(t, postEvents(t, base, events), http.StatusOK, nil)
	v := url.Values{"index_id": {id}, "from": {now.Add(-time.Hour).Format(time.RFC3339)}, "limit": {"3"}}
	page := sameAsMarshal[wireEvents](t, "page 1", send(t, "GET", base+"/v1/indexes/ev/events?"+v.Encode(), ""))
	if len(page.Events) != 3 || page.NextPageToken == "" || page.Events[0].IndexID != id {
		t.Fatalf("page %+v", page)
	}
	v.Set("page_token", page.NextPageToken)
	v.Set("limit", "10")
	rest := sameAsMarshal[wireEvents](t, "page 2", send(t, "GET", base+"/v1/indexes/ev/events?"+v.Encode(), ""))
	if len(rest.Events) != 2 || rest.NextPageToken != "" {
		t.Fatalf("page %+v", rest)
	}
}

// TestListItemsMsgpack reads a list with "Accept: application/msgpack" and
// checks the bytes against the MessagePack specification, built here by
// hand: {"items": [[bin value, timestamp], ...]}.
func TestListItemsMsgpack(t *testing.T) {
	e := startLists(t, nil)
	listsExpect(t, "put feature", e.do(t, "PUT", listFeaturePath("user", "f", "_"), "", `{"ttl":"720h"}`), http.StatusCreated, "")
	path := listItemsPath("user", "f", "_", "u-1")
	listsExpect(t, "add", e.do(t, "POST", path, "", `{"items":[`+
		`{"value":"AAE=","timestamp":"2026-11-22T09:59:00.123Z"},{"value":"","timestamp":"2026-11-22T09:58:00Z"}]}`), http.StatusOK, "")
	req, err := http.NewRequest("GET", e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/msgpack")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 11, 22, 9, 59, 0, 123_000_000, time.UTC)
	second := time.Date(2026, 11, 22, 9, 58, 0, 0, time.UTC)
	want := []byte{0x81, 0xa5, 'i', 't', 'e', 'm', 's', 0xdd, 0, 0, 0, 2}
	want = append(want, 0x92, 0xc4, 2, 0, 1, 0xd7, 0xff)
	want = binary.BigEndian.AppendUint64(want, uint64(first.Nanosecond())<<34|uint64(first.Unix()))
	want = append(want, 0x92, 0xc4, 0, 0xd6, 0xff)
	want = binary.BigEndian.AppendUint32(want, uint32(second.Unix()))
	if !bytes.Equal(got, want) {
		t.Fatalf("body\n% x\nwant\n% x", got, want)
	}
	if ct, vary := resp.Header.Get("Content-Type"), resp.Header.Get("Vary"); ct != "application/msgpack" || vary != "Accept" {
		t.Fatalf("Content-Type %q, Vary %q", ct, vary)
	}
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(got)) {
		t.Fatalf("Content-Length %q for %d bytes", cl, len(got))
	}

	// A full page: {"items": [one], "next_page_token": token}.
	req.URL.RawQuery = "limit=1"
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	page, err := io.ReadAll(resp2.Body)
	if err != nil {
		t.Fatal(err)
	}
	head := []byte{0x82, 0xa5, 'i', 't', 'e', 'm', 's', 0xdd, 0, 0, 0, 1}
	if !bytes.HasPrefix(page, head) {
		t.Fatalf("full page\n% x\ndoes not start\n% x", page, head)
	}
	key := append([]byte{0xaf}, "next_page_token"...)
	i := bytes.Index(page, key)
	// The token, a str8 (0xd9, length) running to the end of the body.
	if i < 0 || i+len(key)+2 > len(page) || page[i+len(key)] != 0xd9 || int(page[i+len(key)+1]) != len(page)-i-len(key)-2 {
		t.Fatalf("full page\n% x\nhas no next_page_token entry at its end", page)
	}
}

// TestEventsMsgpack checks a page of events in MessagePack against bytes
// built by hand: {"events": [[index_id, event_id, timestamp, payload]],
// "next_page_token": str}.
func TestEventsMsgpack(t *testing.T) {
	base, _, _ := indexServer(t)
	decode(t, send(t, "PUT", base+"/v1/indexes/ev", hourlyIndex), http.StatusCreated, nil)
	now := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	decode(t, postEvents(t, base, []eventBody{
		{IndexID: "a", EventID: "e1", Timestamp: now.Format(time.RFC3339Nano), Payload: []byte{7}},
		{IndexID: "a", EventID: "e2", Timestamp: now.Add(time.Millisecond).Format(time.RFC3339Nano)},
	}), http.StatusOK, nil)
	v := url.Values{"index_id": {"a"}, "from": {now.Add(-time.Hour).Format(time.RFC3339)}, "limit": {"1"}}
	req, err := http.NewRequest("GET", base+"/v1/indexes/ev/events?"+v.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;q=0.5, application/x-msgpack")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x82, 0xa6, 'e', 'v', 'e', 'n', 't', 's', 0x91, 0x94, 0xa1, 'a', 0xa2, 'e', '1', 0xd6, 0xff}
	want = binary.BigEndian.AppendUint32(want, uint32(now.Unix()))
	want = append(want, 0xc4, 1, 7, 0xaf)
	want = append(want, "next_page_token"...)
	if !bytes.HasPrefix(got, want) || len(got) < len(want)+2 {
		t.Fatalf("body\n% x\nwant a prefix\n% x", got, want)
	}
	// The token is a str: fixstr or str8 by its length.
	var token string
	switch h := got[len(want)]; {
	case h&0xe0 == 0xa0:
		token = string(got[len(want)+1:])
		if len(token) != int(h&0x1f) {
			t.Fatalf("fixstr token %q of the wrong length", token)
		}
	case h == 0xd9:
		token = string(got[len(want)+2:])
		if len(token) != int(got[len(want)+1]) || len(token) < 32 {
			t.Fatalf("str8 token %q of the wrong length", token)
		}
	default:
		t.Fatalf("token header %#x", h)
	}
	// The token resumes the read, as JSON's does.
	v.Set("page_token", token)
	rest := sameAsMarshal[wireEvents](t, "page 2", send(t, "GET", base+"/v1/indexes/ev/events?"+v.Encode(), ""))
	if len(rest.Events) != 1 || rest.Events[0].EventID != "e2" || len(rest.Events[0].Payload) != 0 {
		t.Fatalf("page 2 %+v", rest)
	}
}

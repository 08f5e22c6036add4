package peers

import (
	"net/http"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// listMsgpack is ebb's MessagePack list read as a MessagePack library
// decodes it: {"items": [[value, timestamp], ...]}.
type listMsgpack struct {
	Items []struct {
		_msgpack  struct{} `msgpack:",as_array"`
		Value     []byte
		Timestamp time.Time
	} `msgpack:"items"`
}

// TestMsgpackInterop decodes ebb's MessagePack list read with a
// MessagePack library, so the encoding is checked against another
// implementation than ebb's own.
func TestMsgpackInterop(t *testing.T) {
	url := startEbb(t)
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/msgpack")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got listMsgpack
	if err := msgpack.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != listGet {
		t.Fatalf("%d items, want %d", len(got.Items), listGet)
	}
	for i, it := range got.Items {
		if string(it.Value) != value(i) {
			t.Fatalf("item %d: value %q, want %q", i, it.Value, value(i))
		}
		if i > 0 && !it.Timestamp.Before(got.Items[i-1].Timestamp) {
			t.Fatalf("item %d: %v not older than %v", i, it.Timestamp, got.Items[i-1].Timestamp)
		}
	}
}

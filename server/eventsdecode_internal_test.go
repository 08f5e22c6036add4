package server

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeEventsAsEncodingJSON checks that an event write's body comes
// out of decodeEvents, the pooled decoder, exactly as out of encoding/json
// (decodeEventsJSON): the same events, or the same error, whether the body
// takes the fast path or is left to encoding/json, and that the common
// bodies do take the fast path.
func TestDecodeEventsAsEncodingJSON(t *testing.T) {
	const ev = `{"index_id":"a","event_id":"e1","timestamp":"2026-11-27T06:00:00.123Z","payload":"aGVsbG8="}`
	for _, tc := range []struct {
		body string
		fast bool // decodeEvents decodes it itself
	}{
		{`{"events":[` + ev + `]}`, true},
		{`{"events":[` + ev + `,{"index_id":"b\u00e9\n","event_id":"e\/2","timestamp":"2026-11-27T06:00:01Z","ttl":"1h"}]}`, true},
		{` {"events" : [ ` + ev + ` , {"event_id":"x","index_id":"y","timestamp":"2026-11-27T06:00:00Z","payload":""} ] } `, true},
		{`{"events":[]}`, true},
		{`{"events":[{}]}`, true},
		{`{"events":[{"index_id":"a","event_id":"e","timestamp":"yesterday"}]}`, true},
		{`{"events":[{"index_id":"a","event_id":"e","timestamp":"2026-11-27T06:00:00Z","payload":"!!"}]}`, true},
		{`{"events":[{"index_id":"a","event_id":"e","timestamp":"2026-11-27T06:00:00Z","ttl":"0s"}]}`, true},
		{`{"events":[{"index_id":"a","event_id":"e","timestamp":"2026-11-27T06:00:00Z","ttl":"-1s"}]}`, true},
		{`{"events":[{"index_id":"a","event_id":"e","timestamp":"2026-11-27T06:00:00Z","payload":null}]}`, false},
		{`{"events":[{"index_id":"a","index_id":"b","event_id":"e","timestamp":"2026-11-27T06:00:00Z"}]}`, false},
		{`{"events":[{"Index_ID":"a","event_id":"e","timestamp":"2026-11-27T06:00:00Z"}]}`, false},
		{`{"events":[{"index_\u0069d":"a","event_id":"e","timestamp":"2026-11-27T06:00:00Z"}]}`, false},
		{`{"events":[{"index_id":"a","event_id":"e","timestamp":"2026-11-27T06:00:00Z","extra":1}]}`, false},
		{`{"events":[{"index_id":7,"event_id":"e","timestamp":"2026-11-27T06:00:00Z"}]}`, false},
		{`{"events":[{"index_id":"\ud800","event_id":"e","timestamp":"2026-11-27T06:00:00Z"}]}`, false},
		{"{\"events\":[{\"index_id\":\"\xff\",\"event_id\":\"e\",\"timestamp\":\"2026-11-27T06:00:00Z\"}]}", false},
		{`{"events":null}`, false},
		{`{}`, false},
		{`{"events":[` + ev + `],"events":[]}`, false},
		{`{"events":[` + ev + `]} {}`, false},
		{`{"events":[` + ev + `]`, false},
		{`{"events":[` + ev + `,]}`, false},
		{`[]`, false},
		{``, false},
		{`{"events":[` + strings.Repeat(ev+",", 1000) + ev + `]}`, true},
	} {
		r := httptest.NewRequest("POST", "/v1/indexes/i/events", strings.NewReader(tc.body))
		events, body, ok, err := decodeEvents(r)
		if ok != tc.fast {
			t.Errorf("%.80s: fast path %v, want %v", tc.body, ok, tc.fast)
		}
		if !ok && err == nil {
			if string(body) != tc.body {
				t.Fatalf("%.80s: the body handed on is %q", tc.body, body)
			}
			events, err = decodeEventsJSON(body)
		}
		wantEvents, wantErr := decodeEventsJSON([]byte(tc.body))
		if tc.body == "" {
			// encoding/json alone sees an empty body as malformed; the
			// handler refuses it before, as decodeEvents does.
			wantEvents, wantErr = nil, DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader("")), new(struct{}))
		}
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("%.80s: error %v, want %v", tc.body, err, wantErr)
			continue
		}
		if !reflect.DeepEqual(events, wantEvents) {
			t.Errorf("%.80s: events\n%+v\nwant\n%+v", tc.body, events, wantEvents)
		}
	}
}

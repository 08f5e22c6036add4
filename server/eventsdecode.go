package server

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ebb-data/ebb/timeseries"
)

// An event write (POST /v1/indexes/{name}/events) is the request ingest
// sends thousands of times a second, and decoding its body through
// encoding/json cost some 1,500 allocations and 170 KB per request of 100
// events (BenchmarkWriteEvents): the body read by doubling, copied again
// into the decoder's buffer, a pointer and a string per field, a slice
// per payload. With a live heap of a few megabytes the collector then ran
// tens of times a second, and its pauses lined up with the tail of the
// write latency. decodeEvents reads the common body, an object holding
// "events", an array of objects of string fields, on a pooled jsontext
// decoder straight from a pooled buffer, with every id, timestamp and TTL
// in one string and every payload in one slice: a handful of allocations
// per request.
//
// It only accepts a document that DecodeJSON would decode to the same
// events. Anything else, a null, another key, a name in another case, a
// duplicate, a syntax error, is left to DecodeJSON (ok false), which gives
// the answer it always gave; validation of the values is shared
// (eventFromWire), so its messages are the same on both paths.

// eventsDecoder is the pooled state of one decode.
type eventsDecoder struct {
	body   []byte // the request body
	src    bytes.Buffer
	dec    jsontext.Decoder
	text   []byte      // ids, timestamps and TTLs, unquoted, end to end
	b64    []byte      // payloads in base64, unquoted, end to end
	fields []wireEvent // by event, offsets into text and b64
}

var eventsDecoders = sync.Pool{New: func() any { return new(eventsDecoder) }}

// wireEvent is one event's fields as sent: each a [start, end) span of
// the decoder's text (payload: of its b64), present when its bit is set.
type wireEvent struct {
	span [fieldCount][2]int
	has  uint8
}

// The fields of an event, in the order of eventJSON.
const (
	fieldIndexID = iota
	fieldEventID
	fieldTimestamp
	fieldPayload
	fieldTTL
	fieldCount
)

func eventField(name []byte) int {
	switch string(name) {
	case "index_id":
		return fieldIndexID
	case "event_id":
		return fieldEventID
	case "timestamp":
		return fieldTimestamp
	case "payload":
		return fieldPayload
	case "ttl":
		return fieldTTL
	}
	return -1
}

// maxPooledEvents bounds the per-event scratch kept for reuse, as
// maxPooledBuf bounds the buffers.
const maxPooledEvents = 4 * timeseries.MaxBatch

// decodeEvents decodes an event write's body into its events, validated
// as putEvents always did. When ok is false it has read the body but
// decoded nothing, and the caller decodes body with decodeBody.
func decodeEvents(r *http.Request) (events []timeseries.Event, body []byte, ok bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil, false, Errorf(http.StatusBadRequest, CodeInvalidArgument, "request body is empty; a JSON object is required")
	}
	d := eventsDecoders.Get().(*eventsDecoder)
	defer d.release()
	if d.body, err = readBody(r, d.body[:0]); err != nil {
		return nil, nil, false, err
	}
	if !d.parse() {
		// The body outlives d, which goes back to the pool.
		return nil, bytes.Clone(d.body), false, nil
	}
	if err := checkEventCount(len(d.fields)); err != nil {
		return nil, nil, true, err
	}
	events, err = d.events()
	return events, nil, true, err
}

// release returns d to the pool, without references to the request.
func (d *eventsDecoder) release() {
	if cap(d.body) > maxPooledBuf || cap(d.text) > maxPooledBuf || cap(d.b64) > maxPooledBuf || cap(d.fields) > maxPooledEvents {
		return
	}
	d.src.Reset()
	d.dec.Reset(&d.src)
	eventsDecoders.Put(d)
}

// parse reads the body's events into d.fields, d.text and d.b64, and
// reports whether the body has the common shape: {"events":[{...}, ...]}
// with string fields of known names, and nothing after it.
func (d *eventsDecoder) parse() bool {
	d.text, d.b64, d.fields = d.text[:0], d.b64[:0], d.fields[:0]
	d.src.Reset()
	d.src.Write(d.body)
	d.dec.Reset(&d.src)
	dec := &d.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	if name, err := dec.ReadValue(); err != nil || string(name) != `"events"` {
		return false
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return false
	}
	for dec.PeekKind() == '{' {
		if _, err := dec.ReadToken(); err != nil {
			return false
		}
		var e wireEvent
		for dec.PeekKind() == '"' {
			name, err := dec.ReadValue()
			if err != nil {
				return false
			}
			// A name with an escape is left to encoding/json.
			f := eventField(name[1 : len(name)-1])
			if f < 0 || e.has&(1<<f) != 0 {
				return false
			}
			v, err := dec.ReadValue()
			if err != nil || v.Kind() != '"' {
				return false
			}
			dst := &d.text
			if f == fieldPayload {
				dst = &d.b64
			}
			start := len(*dst)
			if *dst, err = jsontext.AppendUnquote(*dst, v); err != nil {
				return false
			}
			e.span[f] = [2]int{start, len(*dst)}
			e.has |= 1 << f
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
			return false
		}
		d.fields = append(d.fields, e)
	}
	for _, kind := range []jsontext.Kind{']', '}'} {
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != kind {
			return false
		}
	}
	_, err := dec.ReadToken()
	return err == io.EOF
}

// events validates the parsed fields into events: the ids, timestamps and
// TTLs in one string, the payloads in one slice.
func (d *eventsDecoder) events() ([]timeseries.Event, error) {
	text := string(d.text)
	size := 0
	for i := range d.fields {
		if s := d.fields[i].span[fieldPayload]; d.fields[i].has&(1<<fieldPayload) != 0 {
			size += base64.StdEncoding.DecodedLen(s[1] - s[0])
		}
	}
	payloads := make([]byte, 0, size)
	events := make([]timeseries.Event, len(d.fields))
	for i := range d.fields {
		f := &d.fields[i]
		field := func(k int) (string, bool) {
			return text[f.span[k][0]:f.span[k][1]], f.has&(1<<k) != 0
		}
		w := wireFields{}
		w.indexID, w.hasIndexID = field(fieldIndexID)
		w.eventID, w.hasEventID = field(fieldEventID)
		w.timestamp, w.hasTimestamp = field(fieldTimestamp)
		w.ttl, w.hasTTL = field(fieldTTL)
		if f.has&(1<<fieldPayload) != 0 {
			w.payload = d.b64[f.span[fieldPayload][0]:f.span[fieldPayload][1]]
			w.hasPayload = true
		}
		var err error
		if events[i], payloads, err = eventFromWire(i, w, payloads); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// wireFields is one event as sent, whichever decoder read it.
type wireFields struct {
	indexID, eventID, timestamp, ttl             string
	payload                                      []byte // base64
	hasIndexID, hasEventID, hasTimestamp, hasTTL bool
	hasPayload                                   bool
}

// eventFromWire validates event i and returns it, its payload decoded
// onto the end of payloads, which it returns grown.
func eventFromWire(i int, w wireFields, payloads []byte) (timeseries.Event, []byte, error) {
	bad := func(format string, args ...any) error {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "event %d: %s", i, fmt.Sprintf(format, args...))
	}
	if !w.hasIndexID || !w.hasEventID || !w.hasTimestamp {
		return timeseries.Event{}, payloads, bad("index_id, event_id and timestamp are required")
	}
	ts, err := ParseTime(w.timestamp)
	if err != nil {
		return timeseries.Event{}, payloads, bad("timestamp: %v", err)
	}
	var payload []byte
	if w.hasPayload {
		start := len(payloads)
		if payloads, err = base64.StdEncoding.AppendDecode(payloads, w.payload); err != nil {
			return timeseries.Event{}, payloads, bad("payload is not standard base64: %v", err)
		}
		// Capped, so that an append to one payload cannot run into the next.
		payload = payloads[start:len(payloads):len(payloads)]
	}
	var ttl time.Duration
	if w.hasTTL {
		if ttl, err = ParseDuration(w.ttl); err != nil {
			return timeseries.Event{}, payloads, bad("ttl: %v", err)
		}
		if ttl <= 0 {
			// The service reads a zero TTL as none: refused here,
			// where an explicit one is told from an absent one.
			return timeseries.Event{}, payloads, bad("ttl %s must be positive", w.ttl)
		}
	}
	return timeseries.Event{IndexID: w.indexID, EventID: w.eventID, Timestamp: ts, Payload: payload, TTL: ttl}, payloads, nil
}

package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// MaxBodyBytes bounds request bodies (API.md "Conventions": 8 MiB).
const MaxBodyBytes = 8 << 20

// oversizeDrain is how much of a body past MaxBodyBytes is read and
// dropped before it is refused, so that its 413 is seen; past that the
// connection is closed.
const oversizeDrain = 8 << 20

// DefaultLimit is the page size when a request gives no limit.
const DefaultLimit = store.DefaultLimit

// MaxPageBytes bounds the data a page of events, list items or shared
// table items holds (payloads, values, attributes, keys and ids, before
// encoding): once the items read reach it, the page ends early with a
// next_page_token, however many items limit asked for. A page holds at
// least one item, so it may exceed the bound by one item. The bound keeps
// a request's memory to a few MiB whatever the items' sizes (docs/api.md
// "Paging").
const MaxPageBytes = 4 << 20

// WriteJSON answers with status and v encoded as JSON. A nil v (or status
// 204) writes no body.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	if v == nil || status == http.StatusNoContent {
		w.WriteHeader(status)
		return nil
	}
	// Text such as "<=" in messages is written as it is, not as \u003c:
	// responses are JSON, never HTML.
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Nothing has been written yet, so the caller can still answer
		// with an error.
		return fmt.Errorf("server: encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(status)
	_, err := w.Write(body.Bytes())
	return err
}

// writeCreated answers a create request with v: 201 when the request
// created the resource, 200 when an identical one already existed, so that
// a client may repeat a create safely (API.md: "201/200/409").
func writeCreated(w http.ResponseWriter, created bool, v any) error {
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return WriteJSON(w, status, v)
}

// DecodeJSON decodes the request body, one JSON value of at most
// MaxBodyBytes, into v. Unknown fields, trailing data and an empty body are
// refused. Errors are *Error: 413 too_large for an oversize body, 400
// invalid_argument for anything malformed.
func DecodeJSON(r *http.Request, v any) error {
	if r.Body == nil || r.Body == http.NoBody {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "request body is empty; a JSON object is required")
	}
	data, err := readBody(r, nil)
	if err != nil {
		return err
	}
	return decodeBody(data, v)
}

// readBody appends the request body, at most MaxBodyBytes, to buf, which
// it grows once to the announced Content-Length rather than by doubling
// as io.ReadAll does. The caller has refused an absent body.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= MaxBodyBytes {
		// One byte more, so that the read seeing EOF needs no growth.
		buf = slices.Grow(buf, int(n)+1)
	}
	// The limit wraps whatever reader the caller has, so a handler that
	// reads the body twice still cannot read more than the limit.
	body := http.MaxBytesReader(nil, r.Body, MaxBodyBytes)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(512, cap(buf)))
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				// Read on past the bound, up to oversizeDrain, so that the
				// 413 reaches a client still sending: a connection closed
				// with unread data is reset, and the client sees the reset
				// instead of the answer.
				_, _ = io.CopyN(io.Discard, r.Body, oversizeDrain)
			}
			return nil, decodeError(err)
		}
	}
}

// decodeBody is DecodeJSON on a body already read.
func decodeBody(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	// Duplicate keys and fields in the wrong case, which json accepts.
	if err := checkStrict(data, reflect.TypeOf(v)); err != nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "invalid JSON body: %v", err)
	}
	// Exactly one value: "{} {}" or "{}x" is a malformed request, not two.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "invalid JSON body: unexpected data after the JSON value")
	}
	return nil
}

func decodeError(err error) error {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body exceeds %d bytes", tooBig.Limit)
	case errors.As(err, &netErr) && netErr.Timeout():
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "the request body did not arrive within the server's read timeout")
	case errors.Is(err, io.EOF):
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "request body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "invalid JSON body: unexpected end of input")
	case errors.As(err, &syntax):
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "invalid JSON body at offset %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the body"
		}
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "invalid JSON body: %s must be %s, not %s", field, jsonTypeOf(typ.Type, typ.Field == ""), jsonValueOf(typ.Value))
	}
	// Unknown fields and other decoder complaints ("json: unknown field
	// \"x\"") are already readable.
	return Errorf(http.StatusBadRequest, CodeInvalidArgument, "invalid JSON body: %v", err)
}

// jsonTypeOf names, in JSON's terms, the values a Go type decodes from:
// messages speak of the API, not of the server's types.
func jsonTypeOf(t reflect.Type, body bool) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		if body {
			return "a JSON object"
		}
		return "an object"
	}
	return "another JSON value"
}

// jsonValueOf names the JSON value encoding/json found ("array", "number
// -1").
func jsonValueOf(v string) string {
	kind, rest, _ := strings.Cut(v, " ")
	switch kind {
	case "array":
		return "an array"
	case "object":
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "number":
		if rest != "" {
			return rest
		}
		return "a number"
	}
	return v
}

// ParseLimit returns the request's "limit" query parameter: DefaultLimit
// when absent, otherwise an integer in 1..store.MaxLimit. Errors are 400
// invalid_argument.
func ParseLimit(r *http.Request) (int, error) {
	s := queryGet(r, "limit")
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > store.MaxLimit {
		return 0, Errorf(http.StatusBadRequest, CodeInvalidArgument, "limit %q: want an integer in 1..%d", s, store.MaxLimit)
	}
	return n, nil
}

// ErrUnknownQueryParameter is wrapped by the refusal of a query
// parameter the route does not take.
var ErrUnknownQueryParameter = errors.New("unknown query parameter")

// checkQuery refuses, with 400 invalid_argument, a malformed query string,
// a parameter not in allowed and a parameter given more than once: like
// an unknown body field, a misspelt parameter ("limt") must not be
// silently ignored.
func checkQuery(r *http.Request, allowed []string) error {
	if r.URL.RawQuery == "" || queryAllowed(r.URL.RawQuery, allowed) {
		return nil
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "malformed query string: %v", err)
	}
	names := slices.Sorted(maps.Keys(v))
	for _, name := range names {
		if !slices.Contains(allowed, name) {
			takes := "takes no query parameters"
			if len(allowed) > 0 {
				takes = "takes " + strings.Join(allowed, ", ")
			}
			return &Error{Status: http.StatusBadRequest, Code: CodeInvalidArgument,
				Err: fmt.Errorf("%w %q: this route %s", ErrUnknownQueryParameter, name, takes)}
		}
	}
	for _, name := range names {
		if len(v[name]) > 1 {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "query parameter %q is given %d times; give it once", name, len(v[name]))
		}
	}
	return nil
}

// maxQuickQuery bounds the '&'s of a query string that queryAllowed and
// queryGet read without url.ParseQuery, far under the parameter count
// past which url.ParseQuery fails, so that the two never disagree.
const maxQuickQuery = 64

// quickQuery reports whether raw can be read pair by pair as it stands:
// nothing to unescape ('%', '+'), no ';' (which url.ParseQuery refuses)
// and few pairs.
func quickQuery(raw string) bool {
	return !strings.ContainsAny(raw, "%+;") && strings.Count(raw, "&") <= maxQuickQuery
}

// queryAllowed reports, without allocating, that the raw query string
// needs no unescaping and names only parameters in allowed, each once: the
// common case of every read, answered without building url.Values. False
// is no verdict: checkQuery then parses the query in full, which finds
// what is wrong, or nothing.
func queryAllowed(raw string, allowed []string) bool {
	if len(allowed) > 64 || !quickQuery(raw) {
		return false
	}
	var seen uint64
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue // url.ParseQuery skips empty pairs too
		}
		name, _, _ := strings.Cut(pair, "=")
		i := slices.Index(allowed, name)
		if i < 0 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
	}
	return true
}

// queryGet returns the first value of the query parameter name, as
// r.URL.Query().Get(name) does, without parsing the whole query string
// into a map when it needs no unescaping.
func queryGet(r *http.Request, name string) string {
	raw := r.URL.RawQuery
	if !quickQuery(raw) {
		return r.URL.Query().Get(name)
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if k, v, _ := strings.Cut(pair, "="); pair != "" && k == name {
			return v
		}
	}
	return ""
}

// ParseQueryTime parses the time in query parameter name, as ParseTime
// does. A '+' sent unescaped in a query string arrives as a space, so a
// time that parses once its space is a '+' again is refused with a
// message saying to send the '+' as %2B.
func ParseQueryTime(name, s string) (time.Time, error) {
	t, err := ParseTime(s)
	if err == nil {
		return t, nil
	}
	if strings.Contains(s, " ") {
		if _, perr := timefmt.Parse(strings.ReplaceAll(s, " ", "+")); perr == nil {
			return time.Time{}, Errorf(http.StatusBadRequest, CodeInvalidArgument,
				"%s %q: a '+' in a query string stands for a space; send the offset's '+' as %%2B (%s)",
				name, s, strings.ReplaceAll(url.QueryEscape(strings.ReplaceAll(s, " ", "+")), "%3A", ":"))
		}
	}
	return time.Time{}, Errorf(http.StatusBadRequest, CodeInvalidArgument, "%s: %v", name, err)
}

// ParseTime parses an RFC 3339 time with optional fractional seconds
// ("2026-11-22T10:00:00Z", "2026-11-22T10:00:00.123+01:00") and returns it
// in UTC. Errors are 400 invalid_argument.
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, Errorf(http.StatusBadRequest, CodeInvalidArgument, "missing time; want RFC 3339, e.g. 2026-11-22T10:00:00.123Z")
	}
	t, err := timefmt.Parse(s)
	if err != nil {
		return time.Time{}, Errorf(http.StatusBadRequest, CodeInvalidArgument, "time %q: want RFC 3339, e.g. 2026-11-22T10:00:00.123Z", s)
	}
	return t, nil
}

// ParseDuration parses a Go duration string ("168h", "90s", "0s"). Negative
// durations are refused: no duration in the API can be negative. Errors are
// 400 invalid_argument.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, Errorf(http.StatusBadRequest, CodeInvalidArgument, "duration %q: want a Go duration such as \"168h\" or \"90s\"", s)
	}
	if d < 0 {
		return 0, Errorf(http.StatusBadRequest, CodeInvalidArgument, "duration %q is negative", s)
	}
	return d, nil
}

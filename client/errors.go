package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes of the API (docs/api.md "Errors"): APIError.Code holds one of
// them when the server is an ebb server.
const (
	CodeInvalidArgument     = "invalid_argument"
	CodeUnauthenticated     = "unauthenticated"
	CodePermissionDenied    = "permission_denied"
	CodeNotFound            = "not_found"
	CodeMethodNotAllowed    = "method_not_allowed"
	CodeConflict            = "conflict"
	CodeFailedPrecondition  = "failed_precondition"
	CodeTooLarge            = "too_large"
	CodeExpired             = "expired"
	CodeNoShard             = "no_shard"
	CodeInternal            = "internal"
	CodeUnavailable         = "unavailable"
	CodeInsufficientStorage = "insufficient_storage"
	CodeBadGateway          = "bad_gateway"
)

// Sentinels, one per API error code. An *APIError matches the sentinel of
// its code with errors.Is; checks the client makes before sending (an empty
// name, say) wrap ErrInvalidArgument too.
var (
	// ErrInvalidArgument: malformed JSON, a bad field, name, time or
	// duration, a limit out of range, a bad page token (400).
	ErrInvalidArgument = errors.New("client: invalid argument")
	// ErrUnauthenticated: the server needs a token and got none, or an
	// unknown one (401).
	ErrUnauthenticated = errors.New("client: unauthenticated")
	// ErrPermissionDenied: the token has no scope for the resource (403).
	ErrPermissionDenied = errors.New("client: permission denied")
	// ErrNotFound: no such index, feature, table, item or route (404).
	ErrNotFound = errors.New("client: not found")
	// ErrMethodNotAllowed: the route exists, but not with this method
	// (405); a client older or newer than the server.
	ErrMethodNotAllowed = errors.New("client: method not allowed")
	// ErrConflict: the resource exists with another configuration, or a
	// capacity change the provider would refuse (409).
	ErrConflict = errors.New("client: conflict")
	// ErrFailedPrecondition: a conditional write's If-Match or
	// If-None-Match did not hold; nothing was written (412).
	ErrFailedPrecondition = errors.New("client: failed precondition")
	// ErrTooLarge: the body, a key, a value or a batch is over a limit
	// (413).
	ErrTooLarge = errors.New("client: too large")
	// ErrExpired: the data is already past its retention or TTL; nothing
	// was written (422).
	ErrExpired = errors.New("client: expired")
	// ErrNoShard: no shard table exists for the time (422); the shard
	// manager has been down longer than the index's runway.
	ErrNoShard = errors.New("client: no shard")
	// ErrInternal: a bug or an unexpected backend failure (500); the
	// detail is in the server's log.
	ErrInternal = errors.New("client: internal server error")
	// ErrUnavailable: the backend is down or throttled, the server is
	// shutting down or shedding load (503). Safe to retry.
	ErrUnavailable = errors.New("client: unavailable")
	// ErrInsufficientStorage: the server's disk is full (507).
	ErrInsufficientStorage = errors.New("client: insufficient storage")
	// ErrBadGateway: a migration's legacy table (DynamoDB or CQL)
	// refused the server's credentials, or the server has none for it
	// (502). Retrying does not help until an operator fixes the server's
	// configuration.
	ErrBadGateway = errors.New("client: bad gateway")

	// ErrNoServer: nothing accepts connections at the server's address.
	ErrNoServer = errors.New("client: no server")
)

// codeSentinels maps each API code to its sentinel.
var codeSentinels = map[string]error{
	CodeInvalidArgument:     ErrInvalidArgument,
	CodeUnauthenticated:     ErrUnauthenticated,
	CodePermissionDenied:    ErrPermissionDenied,
	CodeNotFound:            ErrNotFound,
	CodeMethodNotAllowed:    ErrMethodNotAllowed,
	CodeConflict:            ErrConflict,
	CodeFailedPrecondition:  ErrFailedPrecondition,
	CodeTooLarge:            ErrTooLarge,
	CodeExpired:             ErrExpired,
	CodeNoShard:             ErrNoShard,
	CodeInternal:            ErrInternal,
	CodeUnavailable:         ErrUnavailable,
	CodeInsufficientStorage: ErrInsufficientStorage,
	CodeBadGateway:          ErrBadGateway,
}

// statusSentinels stands in for the code when the answer is not the API's
// JSON: a proxy or load balancer in front of the server answered, and its
// status is all there is to go by. 422 is ambiguous and left out.
var statusSentinels = map[int]error{
	http.StatusBadRequest:            ErrInvalidArgument,
	http.StatusUnauthorized:          ErrUnauthenticated,
	http.StatusForbidden:             ErrPermissionDenied,
	http.StatusNotFound:              ErrNotFound,
	http.StatusMethodNotAllowed:      ErrMethodNotAllowed,
	http.StatusConflict:              ErrConflict,
	http.StatusPreconditionFailed:    ErrFailedPrecondition,
	http.StatusRequestEntityTooLarge: ErrTooLarge,
	http.StatusInternalServerError:   ErrInternal,
	http.StatusBadGateway:            ErrUnavailable,
	http.StatusServiceUnavailable:    ErrUnavailable,
	http.StatusGatewayTimeout:        ErrUnavailable,
	http.StatusInsufficientStorage:   ErrInsufficientStorage,
}

// APIError is an error answered by the server: a non-2xx status with the
// body {"error": {"code": ..., "message": ...}}. errors.Is(err, ErrNotFound)
// and the other sentinels match it by Code.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code is the API's error code (one of the Code constants), or empty
	// when the answer was not the API's JSON (then Message holds the start
	// of the body, and errors.Is goes by Status).
	Code string
	// Message is the server's explanation, for people; its wording may
	// change.
	Message string
	// RetryAfter is the server's Retry-After, on a 503 from load
	// shedding; zero when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("client: HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// Is reports whether target is the sentinel of e's code (or, when the
// answer had no code, of its status).
func (e *APIError) Is(target error) bool {
	if s, ok := codeSentinels[e.Code]; ok {
		return s == target
	}
	if e.Code == "" {
		return statusSentinels[e.Status] == target
	}
	return false
}

// decodeError turns a non-2xx answer into an *APIError.
func decodeError(resp *http.Response, data []byte) *APIError {
	e := &APIError{Status: resp.StatusCode}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		}
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &body); err == nil && body.Error.Code != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
		return e
	}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	if text == "" {
		text = http.StatusText(resp.StatusCode)
	}
	e.Message = text
	return e
}

// noServerError is a connection refused at the server's address.
type noServerError struct {
	addr string
	err  error
}

func (e *noServerError) Error() string {
	return "no server at " + e.addr + " — start one with `ebb serve`"
}

func (e *noServerError) Unwrap() error { return e.err }

func (e *noServerError) Is(target error) bool { return target == ErrNoServer }

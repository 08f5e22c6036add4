package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Error codes of the API (API.md "Conventions"). Every error body carries
// exactly one of them.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodeUnauthenticated  = "unauthenticated"
	CodePermissionDenied = "permission_denied"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	// CodeFailedPrecondition (412): a conditional write's precondition
	// (If-Match, If-None-Match) did not hold; nothing was written.
	CodeFailedPrecondition = "failed_precondition"
	CodeExpired            = "expired"
	CodeNoShard            = "no_shard"
	CodeTooLarge           = "too_large"
	CodeUnavailable        = "unavailable"
	// CodeInsufficientStorage (507): the disk is below its free-space
	// floor; nothing was written. Deletes and drops are still accepted.
	CodeInsufficientStorage = "insufficient_storage"
	// CodeBadGateway (502): a backend the server reaches on the
	// request's behalf, other than its own (a migration's DynamoDB or CQL
	// legacy table), refused the server's credentials, or the server has
	// none for it. An operator must fix the server's configuration;
	// retrying does not help until then.
	CodeBadGateway = "bad_gateway"
	CodeInternal   = "internal"
)

// Error is an error with the HTTP status and API code it is answered with.
// Handlers build one with Errorf when no store sentinel fits.
type Error struct {
	Status int
	Code   string
	Err    error
}

// Errorf returns an *Error answered with status and code; the message is
// formatted like fmt.Errorf, so %w keeps the wrapped error reachable by
// errors.Is and errors.As.
func Errorf(status int, code, format string, args ...any) error {
	return &Error{Status: status, Code: code, Err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Is reports an invalid_argument error as store.ErrInvalid, a not_found one
// as store.ErrNotFound and so on, so that callers of the parse helpers can
// test for the store sentinels as everywhere else.
func (e *Error) Is(target error) bool {
	s, ok := codeSentinels[e.Code]
	return ok && s == target
}

var codeSentinels = map[string]error{
	CodeInvalidArgument:     store.ErrInvalid,
	CodeNotFound:            store.ErrNotFound,
	CodeConflict:            store.ErrConflict,
	CodeTooLarge:            store.ErrTooLarge,
	CodeUnavailable:         store.ErrUnavailable,
	CodeInsufficientStorage: store.ErrInsufficientStorage,
}

// StatusClientClosedRequest is the status counted (in
// ebb_http_requests_total) for a request whose client went away before it
// was answered.
const StatusClientClosedRequest = 499

// errorMapping answers errors matching target (errors.Is) with status and
// code.
type errorMapping struct {
	target error
	status int
	code   string
}

// storeMappings maps the store sentinels; the first match wins.
var storeMappings = []errorMapping{
	{store.ErrInvalid, http.StatusBadRequest, CodeInvalidArgument},
	{store.ErrTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge},
	{store.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{store.ErrTableNotFound, http.StatusNotFound, CodeNotFound},
	{store.ErrConflict, http.StatusConflict, CodeConflict},
	{store.ErrTableExists, http.StatusConflict, CodeConflict},
	// A capacity change the provider would refuse conflicts with the
	// table's recent history; retrying at once cannot help.
	{store.ErrCapacityLimit, http.StatusConflict, CodeConflict},
	{store.ErrThrottled, http.StatusServiceUnavailable, CodeUnavailable},
	{store.ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable},
	// The disk is full: retrying helps only once expiry, a delete or a
	// drop has freed space. 507 is WebDAV's status, the HTTP convention.
	{store.ErrInsufficientStorage, http.StatusInsufficientStorage, CodeInsufficientStorage},
	// A disk fault: this server refuses writes until it restarts (and
	// reports not ready); another instance, or this one restarted, can
	// take the retry.
	{store.ErrStorageFault, http.StatusServiceUnavailable, CodeUnavailable},
	// The store closes only while the server shuts down; a client should
	// retry against the next instance.
	{store.ErrClosed, http.StatusServiceUnavailable, CodeUnavailable},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, CodeUnavailable},
	{context.Canceled, http.StatusServiceUnavailable, CodeUnavailable},
}

// contextMessages are what a client reads of a request that ran out of
// time, or was canceled, with no message of its own.
var contextMessages = map[error]string{
	context.DeadlineExceeded: "deadline exceeded",
	context.Canceled:         "request canceled",
}

// MapError answers errors matching target (errors.Is) with status and code.
// Features call it for their own sentinels that no store sentinel covers,
// for example:
//
//	s.MapError(timeseries.ErrNoShard, http.StatusUnprocessableEntity, server.CodeNoShard)
//
// Mappings added here are tried, in the order added, before the store
// sentinels. Call it only while the Server is being built (from a Feature).
func (s *Server) MapError(target error, status int, code string) {
	s.mappings = append(s.mappings, errorMapping{target, status, code})
}

// internalMessage is what a client reads of an error the server does not
// know: nothing of its text, which may name files, hosts or a backend's
// internals.
const internalMessage = "internal error"

// classify returns the status, code and message an error is answered with.
// The status and code come from the error's type (an *Error) or from the
// sentinel it matches; the message is the one the error was made with
// (store.ClientMessage), never its text. A matched error made without a
// message reads as its sentinel's words. Unknown errors are 500 internal
// with a generic message, so that no internal detail reaches a client.
func (s *Server) classify(err error) (status int, code, msg string, known bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Status, e.Code, e.Error(), true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), true
	}
	for _, list := range [][]errorMapping{s.mappings, storeMappings} {
		for _, m := range list {
			if errors.Is(err, m.target) {
				return m.status, m.code, mappedMessage(err, m.target), true
			}
		}
	}
	return http.StatusInternalServerError, CodeInternal, internalMessage, false
}

// mappedMessage returns what a client reads of err, which matches target.
func mappedMessage(err, target error) string {
	if msg, ok := store.ClientMessage(err); ok && msg != "" {
		return msg
	}
	if msg, ok := contextMessages[target]; ok {
		return msg
	}
	if msg, ok := store.ClientMessage(target); ok && msg != "" {
		return msg
	}
	return "request refused"
}

// errorBody is the JSON body of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// refuseUnread answers err to a request refused before its body is
// read, closing the connection when it has one: net/http would otherwise
// wait for up to 256 KiB of it to keep the connection, so a client
// sending its body slowly, or never, would hold the connection until the
// read timeout though already refused.
func (s *Server) refuseUnread(w http.ResponseWriter, r *http.Request, route string, err error) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	s.writeError(w, r, route, err)
	if r.ContentLength != 0 {
		// Closing the request body still reads what is left of it, up to
		// 256 KiB, Connection: close or not; a read deadline already past
		// ends that read at once, so the connection closes now. The hot
		// listener closes without reading.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// writeError answers err. Unknown errors are logged with their detail,
// which the client does not see; known ones are the client's doing and are
// logged at debug only.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, route string, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client hung up: not a server error. Counted apart as 499,
		// nginx's convention, and logged at debug; nobody reads the body.
		s.log.Debug("client closed the request", "route", route, "err", err)
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	status, code, msg, known := s.classify(err)
	if known {
		s.log.Debug("request refused", "route", route, "status", status, "code", code, "err", err)
	} else {
		s.log.Error("request failed", "route", route, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ebb"`)
	}
	if errors.Is(err, ErrOverloaded) {
		// Shed by admission or by the response budget (a page read
		// inside its handler): either clears within a second.
		w.Header().Set("Retry-After", "1")
	}
	writeErrorBody(w, status, code, msg)
}

// protocolCodes are the API codes of the statuses a listener answers
// before any route, for a request it cannot read: such requests are the
// client's doing.
var protocolCodes = map[int]string{
	http.StatusRequestHeaderFieldsTooLarge: CodeTooLarge,
	http.StatusRequestEntityTooLarge:       CodeTooLarge,
}

// protocolError returns the whole response to a request a listener cannot
// read: the API's JSON error, and Connection: close, since what follows
// on the connection cannot be trusted to be a request.
func protocolError(status int, msg string) []byte {
	code, ok := protocolCodes[status]
	if !ok {
		code = CodeInvalidArgument
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // as WriteJSON
	_ = enc.Encode(errorBody{Error: errorDetail{Code: code, Message: msg}})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), body.Len(), body.Bytes())
}

// netHTTPErrorHeaders are the headers of the answers net/http writes
// itself, in plain text, to requests it cannot read.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// asProtocolError returns, for b, one write of net/http's own answer to a
// request it could not read (its plain-text 400, 431, 501 and 505, and
// its 417 to an Expect other than 100-continue), the same answer as
// protocolError writes it; ok is false for anything else. net/http writes
// them straight to the connection, with no hook, so the main listener's
// connections translate them (conns.go). Only a write that is the whole
// answer, exactly as net/http writes it, is taken for one: a write of a
// response body that merely starts like one is left alone.
func asProtocolError(b []byte) (out []byte, ok bool) {
	line, rest, found := bytes.Cut(b, []byte("\r\n"))
	if !found || len(line) < len("HTTP/1.1 400 ") || (!bytes.HasPrefix(line, []byte("HTTP/1.1 ")) && !bytes.HasPrefix(line, []byte("HTTP/1.0 "))) || line[12] != ' ' {
		return nil, false
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil || status < 400 {
		return nil, false
	}
	if status == http.StatusExpectationFailed {
		// Written as a response with headers only (Connection: close,
		// Content-Length: 0, Date); no handler answers 417.
		if string(line[9:]) != "417 Expectation Failed" || !bytes.HasSuffix(rest, []byte("\r\n\r\n")) ||
			!bytes.Contains(rest, []byte("Content-Length: 0\r\n")) || bytes.Count(rest, []byte("\r\n\r\n")) != 1 {
			return nil, false
		}
		return protocolError(status, "unsupported expectation; only 100-continue is"), true
	}
	body, found := bytes.CutPrefix(rest, []byte(netHTTPErrorHeaders[2:]))
	if !found || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return nil, false
	}
	// The body repeats the status line, or, for 501, is fixed.
	if string(body) != string(line[9:]) && !(status == http.StatusNotImplemented && string(body) == "Unsupported transfer encoding") {
		return nil, false
	}
	msg := "malformed request"
	if _, detail, found := bytes.Cut(line[12:], []byte(": ")); found {
		msg = string(detail)
	}
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		msg = fmt.Sprintf("request headers exceed %d bytes", hotHeaderLimit)
	case http.StatusNotImplemented:
		msg = "unsupported transfer encoding"
	}
	return protocolError(status, msg), true
}

func writeErrorBody(w http.ResponseWriter, status int, code, msg string) {
	_ = WriteJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// logger returns l, or a logger that discards everything when l is nil.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

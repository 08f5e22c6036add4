package store

import (
	"errors"
	"fmt"
)

// Error is an error made with the message a client reads. Its kind, one
// of this package's sentinels or a feature's error made with Mark, says
// what went wrong (errors.Is matches it, and the HTTP layer maps it to a
// status and code); its message says it in the API's words, without Go
// package names or the kind's sentinel text, which the code already
// conveys; its cause, if any, is for logs alone. Error keeps the house
// style's text ("store: invalid argument: empty key") for logs.
//
// The message is written where the error is made, since only there is it
// known what a client may read: a backend's error text, a file path or a
// driver's message goes in the cause (Wrapf), never in the message.
type Error struct {
	kind  error  // errors.Is target; nil for none
	text  string // Error's text before the cause
	msg   string // what a client reads
	cause error  // reachable by errors.Is and As; its text is logged only
}

// Mark returns a feature's own error of kind (a sentinel of this package,
// or nil for one no store sentinel covers, which the HTTP layer maps by
// itself): errors.Is matches it and kind. Its text is pkg: msg; a client
// reads msg. Features make their sentinels with it, so that the HTTP
// layer answers them without knowing the feature:
//
//	ErrNoTable = store.Mark(store.ErrNotFound, "multitable", "no such table")
func Mark(kind error, pkg, msg string) error {
	return &Error{kind: kind, text: pkg + ": " + msg, msg: msg}
}

// Errorf returns an error of kind whose message is the formatted detail,
// after kind's own message if kind has one (a feature's error made with
// Mark or Errorf): Errorf(ErrNoTable, "%q", "t") reads `no such table:
// "t"` to a client and `multitable: no such table: "t"` in logs. An error
// among args is written with its own client message when it has one, and
// %w keeps it reachable by errors.Is and errors.As; an error whose text is
// not for clients belongs in Wrapf's cause instead.
func Errorf(kind error, format string, args ...any) error {
	detail := fmt.Errorf(format, args...)
	shown := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok {
			if m, ok := ClientMessage(err); ok {
				a = shownError{err, m}
			}
		}
		shown[i] = a
	}
	e := &Error{kind: kind, text: detail.Error(), msg: fmt.Errorf(format, shown...).Error()}
	if kind != nil {
		e.text = kind.Error() + ": " + e.text
		if m, ok := ownMessage(kind); ok && m != "" {
			e.msg = m + ": " + e.msg
		}
	}
	if wraps(detail) {
		e.cause = detail
	}
	return e
}

// Wrapf is Errorf with a cause whose text is logged after the error's
// own but never shown to a client: a backend's or the file system's
// error, for example.
func Wrapf(kind, cause error, format string, args ...any) error {
	e := Errorf(kind, format, args...).(*Error)
	if cause == nil {
		return e
	}
	if e.cause == nil {
		e.cause = cause
	} else {
		e.cause = errors.Join(e.cause, cause)
	}
	e.text += ": " + cause.Error()
	return e
}

func (e *Error) Error() string { return e.text }

// ClientMessage returns what a client reads of the error.
func (e *Error) ClientMessage() string { return e.msg }

func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2)
	if e.kind != nil {
		out = append(out, e.kind)
	}
	if e.cause != nil {
		out = append(out, e.cause)
	}
	return out
}

// ClientMessage returns the message a client reads of err: that of the
// first error in its chain (as errors.As walks it) that carries one (an
// *Error, a MutationError, or any error with a ClientMessage method), else
// the words of the store sentinel it matches. ok is false when err has
// neither: its text may be internal, and a client must not read it.
func ClientMessage(err error) (msg string, ok bool) {
	if m, ok := ownMessage(err); ok {
		return m, true
	}
	for _, k := range kindMessages {
		if errors.Is(err, k.kind) {
			return k.msg, true
		}
	}
	return "", false
}

// ownMessage returns the message of the first error in err's chain that
// carries one.
func ownMessage(err error) (string, bool) {
	var c interface{ ClientMessage() string }
	if errors.As(err, &c) {
		return c.ClientMessage(), true
	}
	return "", false
}

// kindMessages are the words of the sentinels an error made without a
// message of its own is answered with.
var kindMessages = []struct {
	kind error
	msg  string
}{
	{ErrNotFound, "not found"},
	{ErrTableNotFound, "table not found"},
	{ErrTableExists, "table exists with a different spec"},
	{ErrConflict, "conflicts with existing configuration"},
	{ErrInvalid, "invalid argument"},
	{ErrTooLarge, "too large"},
	{ErrThrottled, "throttled"},
	{ErrUnavailable, "unavailable"},
	{ErrCapacityLimit, "capacity change limit reached"},
	{ErrClosed, "closed"},
	{ErrInsufficientStorage, "insufficient storage"},
	{ErrStorageFault, "storage fault"},
}

// shownError is an error argument of Errorf as a client reads it.
type shownError struct {
	err error
	msg string
}

func (e shownError) Error() string { return e.msg }

func (e shownError) Unwrap() error { return e.err }

// wraps reports whether err, made by fmt.Errorf, wraps another error.
func wraps(err error) bool {
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap() != nil
	case interface{ Unwrap() []error }:
		return len(u.Unwrap()) > 0
	}
	return false
}

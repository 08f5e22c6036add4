package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/ebb-data/ebb/store"
)

// sentinels are the store errors a backend's mapping passes through.
var sentinels = []error{store.ErrTableNotFound, store.ErrInvalid, store.ErrTooLarge,
	store.ErrThrottled, store.ErrUnavailable, store.ErrNotFound, store.ErrCapacityLimit,
	store.ErrTableExists, store.ErrClosed, store.ErrConflict}

// Mapped reports whether err already carries a store sentinel (mapped by
// an inner call, or made by the backend itself); a backend's mapping then
// only adds the operation to its message.
func Mapped(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// Unreached reports whether err is a transport failure (a network error,
// a refused or reset connection, a connection closed mid-answer): the
// service was not reached or its answer was lost, which is
// store.ErrUnavailable on every backend.
func Unreached(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Cancelled reports whether err is the caller's cancellation of ctx, not
// a deadline: whatever failed after that is the caller's doing, and is
// returned as it is rather than as unavailability.
func Cancelled(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

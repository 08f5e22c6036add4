package cql

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// errKind classifies a driver error for retries and mapping.
type errKind uint8

const (
	kindOther errKind = iota
	// kindOverloaded: the coordinator refused before doing anything
	// (overloaded, bootstrapping, truncating); safe to retry.
	kindOverloaded
	// kindUnavailable: too few replicas alive, or no connection at all;
	// nothing was done.
	kindUnavailable
	// kindReadTimeout: replicas did not answer a read in time.
	kindReadTimeout
	// kindWriteTimeout: replicas did not acknowledge a write in time; it
	// may have been applied.
	kindWriteTimeout
	// kindCASUnknown: a conditional write's outcome is unknown.
	kindCASUnknown
	// kindNotFound: the table does not exist (dropped meanwhile).
	kindNotFound
	// kindTooLarge: a size limit of the cluster.
	kindTooLarge
	// kindInvalid: the cluster refused the request as invalid.
	kindInvalid
)

func classify(err error) errKind {
	var (
		unavail  *gocql.RequestErrUnavailable
		overload *gocql.RequestErrOverloaded
		boot     *gocql.RequestErrBootstrapping
		trunc    *gocql.RequestErrTruncate
		rto      *gocql.RequestErrReadTimeout
		wto      *gocql.RequestErrWriteTimeout
		rf       *gocql.RequestErrReadFailure
		wf       *gocql.RequestErrWriteFailure
		cas      *gocql.RequestErrCASWriteUnknown
		inv      *gocql.RequestErrInvalid
	)
	switch {
	case err == nil:
		return kindOther
	case errors.As(err, &overload), errors.As(err, &boot), errors.As(err, &trunc):
		return kindOverloaded
	case errors.As(err, &unavail):
		return kindUnavailable
	case errors.As(err, &rto), errors.As(err, &rf):
		return kindReadTimeout
	case errors.As(err, &wto):
		if wto.WriteType == "CAS" {
			return kindCASUnknown
		}
		return kindWriteTimeout
	case errors.As(err, &wf):
		return kindWriteTimeout
	case errors.As(err, &cas):
		return kindCASUnknown
	case errors.As(err, &inv):
		return classifyInvalid(inv.Message())
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrConnectionClosed),
		errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, gocql.ErrNoStreams),
		errors.Is(err, gocql.ErrSessionClosed):
		return kindUnavailable
	}
	if remote.Unreached(err) {
		return kindUnavailable
	}
	return kindOther
}

// classifyInvalid reads an InvalidRequest message: the cluster uses that
// one code for a missing table, for size limits and for real mistakes.
func classifyInvalid(msg string) errKind {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "unconfigured table"), strings.Contains(m, "does not exist"),
		strings.Contains(m, "keyspace") && strings.Contains(m, "not found"),
		strings.Contains(m, "cannot be found"):
		return kindNotFound
	case strings.Contains(m, "ttl"), strings.Contains(m, "expiration"):
		return kindInvalid
	case strings.Contains(m, "too large"), strings.Contains(m, "too big"), strings.Contains(m, "exceeds"),
		strings.Contains(m, "size limit"):
		return kindTooLarge
	}
	return kindInvalid
}

// mapErr maps a driver or transport error onto the store sentinels, keeping
// the original in the chain. ctx is the operation's context: a deadline it
// hit is unavailability, a cancellation by the caller is returned as is.
func mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		// The caller gave up: whatever failed after that is its doing.
		return fmt.Errorf("%s: %w (%v)", op, ctx.Err(), err)
	}
	if remote.Mapped(err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	switch classify(err) {
	case kindOverloaded:
		return fmt.Errorf("%s: %w: %w", op, store.ErrThrottled, err)
	case kindUnavailable, kindReadTimeout, kindWriteTimeout, kindCASUnknown:
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	case kindNotFound:
		return fmt.Errorf("%s: %w: %w", op, store.ErrTableNotFound, err)
	case kindTooLarge:
		return fmt.Errorf("%s: %w: %w", op, store.ErrTooLarge, err)
	case kindInvalid:
		return fmt.Errorf("%s: %w: %w", op, store.ErrInvalid, err)
	}
	if remote.Cancelled(ctx, err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	}
	var re gocql.RequestError
	if errors.As(err, &re) {
		// A server error of another kind (syntax, authorization, a server
		// fault): not something a retry fixes; returned as it is.
		return fmt.Errorf("%s: %w", op, err)
	}
	// Anything else from the transport: the cluster was not reached.
	return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
}

package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// apiCode returns the DynamoDB error code of err ("" when err is not a
// service error). Emulators answer with the full shape name
// ("com.amazon.coral.service#UnknownOperationException"); the SDK keeps the
// part after '#'.
func apiCode(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	code := ae.ErrorCode()
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	return code
}

func isCode(err error, codes ...string) bool {
	c := apiCode(err)
	for _, want := range codes {
		if c == want {
			return true
		}
	}
	return false
}

func isNotFound(err error) bool { return isCode(err, "ResourceNotFoundException") }
func isInUse(err error) bool    { return isCode(err, "ResourceInUseException") }
func isConditionFailed(err error) bool {
	return isCode(err, "ConditionalCheckFailedException")
}
func isUnknownOperation(err error) bool {
	return isCode(err, "UnknownOperationException") ||
		// Some implementations answer an unsupported operation with a
		// validation error naming it.
		(isCode(err, "ValidationException") && strings.Contains(strings.ToLower(errMessage(err)), "unknown operation"))
}

func errMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	return err.Error()
}

// isSizeMessage reports whether a validation message is about a size limit
// (an item, a key, a request), which DynamoDB reports as a validation error.
func isSizeMessage(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "size") || strings.Contains(msg, "too large") || strings.Contains(msg, "exceeded")
}

// throttleCodes are the codes DynamoDB uses when it refuses for lack of
// capacity or request rate; the SDK retries them, and what is left after
// the bound surfaces as store.ErrThrottled.
var throttleCodes = []string{
	"ProvisionedThroughputExceededException", "ThrottlingException",
	"RequestLimitExceeded", "LimitExceededException", "TransactionInProgressException",
}

// mapErr maps a DynamoDB or transport error onto the store sentinels, keeping
// the original error in the chain. ctx is the operation's context: a deadline
// it hit is reported as unavailability, a cancellation by the caller as is.
func mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if remote.Mapped(err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	code := apiCode(err)
	switch {
	case code == "ResourceNotFoundException":
		return fmt.Errorf("%s: %w: %w", op, store.ErrTableNotFound, err)
	case isCode(err, throttleCodes...):
		return fmt.Errorf("%s: %w: %w", op, store.ErrThrottled, err)
	case code == "ItemCollectionSizeLimitExceededException":
		return fmt.Errorf("%s: %w: %w", op, store.ErrTooLarge, err)
	case code == "ValidationException":
		if isSizeMessage(errMessage(err)) {
			return fmt.Errorf("%s: %w: %w", op, store.ErrTooLarge, err)
		}
		return fmt.Errorf("%s: %w: %w", op, store.ErrInvalid, err)
	case code == "InternalServerError" || code == "ServiceUnavailable" || code == "InternalFailure":
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	case code != "":
		return fmt.Errorf("%s: %w", op, err)
	}
	// No service answer: a transport failure or a timeout.
	if remote.Cancelled(ctx, err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || remote.Unreached(err) || ctx.Err() != nil {
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	}
	// Anything else from the transport (a broken response, an exhausted
	// retry budget) is treated as the backend being unreachable: retrying
	// later is the right move for the caller.
	return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
}

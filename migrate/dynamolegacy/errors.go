package dynamolegacy

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
)

// credentialCodes are the codes with which DynamoDB (and the AWS request
// signing in front of it) refuses the caller's credentials or their
// permissions: the server's configuration is at fault, not the request.
var credentialCodes = map[string]bool{
	"UnrecognizedClientException": true, "InvalidSignatureException": true, "IncompleteSignatureException": true,
	"MissingAuthenticationTokenException": true, "MissingAuthenticationToken": true, "InvalidClientTokenId": true,
	"ExpiredTokenException": true, "SignatureDoesNotMatch": true, "AccessDeniedException": true,
}

// throttleCodes are the codes with which DynamoDB refuses for lack of
// capacity or request rate, once the SDK's retries are spent.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true, "ThrottlingException": true, "RequestLimitExceeded": true,
	"LimitExceededException": true,
}

// mapErr maps an error of the legacy table's DynamoDB onto
// migrate.ErrLegacyCredentials and the store sentinels, keeping it in the
// chain: credentials refused or missing, throttling, and the service or
// its transport failing (store.ErrUnavailable). Other service errors are
// kept as they are.
func mapErr(ctx context.Context, op string, err error) error {
	if errors.Is(err, migrate.ErrLegacyCredentials) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch code := ae.ErrorCode(); {
		case credentialCodes[code]:
			return fmt.Errorf("%s: %w: %w", op, migrate.ErrLegacyCredentials, err)
		case throttleCodes[code]:
			return fmt.Errorf("%s: %w: %w", op, store.ErrThrottled, err)
		case code == "InternalServerError" || code == "ServiceUnavailable" || code == "InternalFailure":
			return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		// The caller went away: not the table's failure.
		return fmt.Errorf("%s: %w", op, err)
	}
	// No answer from the service: a transport failure or a timeout.
	return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
}

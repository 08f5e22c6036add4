package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// TestClassify: every kind of error the handlers return is answered with
// the status and code of API.md and with the message it was made with,
// which names no Go package and repeats no sentinel text, however deep in
// the chain it is. Both listeners answer through classify.
func TestClassify(t *testing.T) {
	s := &Server{}
	mapMigrationErrors(s)
	cause := errors.New("pebble: /var/lib/ebb/000042.log: input/output error")
	for _, c := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{store.ErrNotFound, 404, CodeNotFound, "not found"},
		{store.ErrTableNotFound, 404, CodeNotFound, "table not found"},
		{store.ErrInvalid, 400, CodeInvalidArgument, "invalid argument"},
		{store.Errorf(store.ErrInvalid, "empty key"), 400, CodeInvalidArgument, "empty key"},
		{store.Errorf(store.ErrTooLarge, "value is %d bytes", 9), 413, CodeTooLarge, "value is 9 bytes"},
		{store.ErrConflict, 409, CodeConflict, "conflicts with existing configuration"},
		{store.ErrTableExists, 409, CodeConflict, "table exists with a different spec"},
		{store.ErrCapacityLimit, 409, CodeConflict, "capacity change limit reached"},
		{store.ErrThrottled, 503, CodeUnavailable, "throttled"},
		{fmt.Errorf("cql: %w", store.ErrUnavailable), 503, CodeUnavailable, "unavailable"},
		{store.Wrapf(store.ErrUnavailable, cause, "table t: reading the disk failed"), 503, CodeUnavailable, "table t: reading the disk failed"},
		{store.Wrapf(store.ErrStorageFault, cause, "the disk failed a write"), 503, CodeUnavailable, "the disk failed a write"},
		{store.Errorf(store.ErrInsufficientStorage, "%d bytes free", 10), 507, CodeInsufficientStorage, "10 bytes free"},
		{store.ErrClosed, 503, CodeUnavailable, "closed"},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), 503, CodeUnavailable, "deadline exceeded"},
		{ErrOverloaded, 503, CodeUnavailable, "server overloaded; retry after a second"},
		{&store.MutationError{Noun: "item", Index: 3, Err: store.Errorf(store.ErrTooLarge, "value is 9 bytes, at most 8")},
			413, CodeTooLarge, "item 3: value is 9 bytes, at most 8"},
		{multitable.ErrNoTable, 404, CodeNotFound, "no such table"},
		{fmt.Errorf("multitable: get: %w", store.Errorf(multitable.ErrNoTable, "table %q", "t")), 404, CodeNotFound, `no such table: table "t"`},
		{store.Errorf(multitable.ErrInvalid, "empty key"), 400, CodeInvalidArgument, "invalid argument: empty key"},
		{fmt.Errorf("timeseries: get: %w", store.Mark(timeseries.ErrIndexNotFound, "timeseries", `index "nope" not found`)), 404, CodeNotFound, `index "nope" not found`},
		{migrate.ErrNotMigrating, 404, CodeNotFound, "index is not migrating"},
		{&migrate.TransitionError{From: migrate.ShadowWrite, To: migrate.Cutover, Reason: "too soon"},
			409, CodeConflict, "shadow-write -> cutover refused: too soon (force overrides)"},
		// A migrate error wrapping a backend's, as migrate.OpenTable
		// wraps what CreateTable returns: the backend's message, without
		// its package.
		{fmt.Errorf("migrate: legacy table %s: %w", "old", store.Errorf(pebble.ErrCheckpointTarget, "cannot create %s", "/x")),
			400, CodeInvalidArgument, "checkpoint directory refused: cannot create /x"},
		// A backend's error made without a message: the sentinel's words,
		// not the backend's text.
		{fmt.Errorf("migrate: save %s: %w", "ev", fmt.Errorf("cql: host 10.0.0.7: %w", store.ErrUnavailable)), 503, CodeUnavailable, "unavailable"},
		{store.Errorf(timeseries.ErrExpired, "timestamp 2001-01-01T00:00:00Z + retention 24h <= now"),
			422, CodeExpired, "already expired: timestamp 2001-01-01T00:00:00Z + retention 24h <= now"},
		{&store.MutationError{Noun: "event", Index: 1, Err: store.Errorf(timeseries.ErrNoShard, "index ev: 2001-01-01T00:00:00Z")},
			422, CodeNoShard, "event 1: no shard for that time: index ev: 2001-01-01T00:00:00Z"},
		{store.Wrapf(migrate.ErrLegacyCredentials, cause, "table old"), 502, CodeBadGateway,
			"the legacy table's backend refused the server's credentials, or there are none: table old"},
		{Errorf(http.StatusForbidden, CodePermissionDenied, "token lacks scope %s", "admin"), 403, CodePermissionDenied, "token lacks scope admin"},
		{&http.MaxBytesError{Limit: 10}, 413, CodeTooLarge, "request body exceeds 10 bytes"},
	} {
		status, code, msg, known := s.classify(c.err)
		if status != c.status || code != c.code || msg != c.msg || !known {
			t.Errorf("classify(%q) = %d %s %q (known %v), want %d %s %q", c.err, status, code, msg, known, c.status, c.code, c.msg)
		}
		if packagePrefix.MatchString(msg) {
			t.Errorf("classify(%q): message %q names a Go package", c.err, msg)
		}
	}
}

// packagePrefix matches a message part that starts with a Go package
// name of the module, as error texts do by house style.
var packagePrefix = regexp.MustCompile(`(^|: )(ebb|store|pebble|cql|dynamo|remote|kit|keyenc|lists|multitable|timeseries|migrate|cqllegacy|dynamolegacy|legacyopen|expiry|meter|shardmgr|server|lease): `)

// TestClassifyUnknown: an error the server does not know is answered 500
// internal with a generic message: nothing of its text (a file path, a
// backend's message) reaches the client.
func TestClassifyUnknown(t *testing.T) {
	s := &Server{}
	mapMigrationErrors(s)
	for _, err := range []error{
		errors.New("pebble: open /var/lib/ebb/MANIFEST-000001: permission denied"),
		fmt.Errorf("lists: add: %w", errors.New("dynamo: operation error DynamoDB: PutItem, https response error StatusCode: 500")),
		store.Mark(nil, "feature", "a feature error nobody maps"),
	} {
		status, code, msg, known := s.classify(err)
		if status != http.StatusInternalServerError || code != CodeInternal || msg != "internal error" || known {
			t.Errorf("classify(%q) = %d %s %q (known %v), want 500 internal \"internal error\"", err, status, code, msg, known)
		}
	}
}

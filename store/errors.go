package store

import "errors"

// Sentinel errors. Every error a Store returns that a caller can act on wraps
// exactly one of these.
var (
	// ErrNotFound: the row does not exist or is expired.
	ErrNotFound = errors.New("store: not found")
	// ErrTableNotFound: no table of that name exists.
	ErrTableNotFound = errors.New("store: table not found")
	// ErrTableExists: a table of that name exists with a different spec.
	ErrTableExists = errors.New("store: table exists with a different spec")
	// ErrConflict: a conditional write's condition did not hold (nothing
	// was written), or an object (index, feature, logical table) exists
	// with a different configuration.
	ErrConflict = errors.New("store: conflicts with existing configuration")
	// ErrInvalid: the request is malformed (bad name, wrong type, missing key
	// column, unknown column, empty partition key, bad page token...).
	// Nothing was written.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrTooLarge: a key, value, row or batch exceeds a size limit. Nothing
	// was written.
	ErrTooLarge = errors.New("store: too large")
	// ErrThrottled: the backend refused for lack of capacity after retries.
	// Safe to retry later.
	ErrThrottled = errors.New("store: throttled")
	// ErrUnavailable: the backend could not be reached or timed out. Safe to
	// retry; the write may or may not have been applied (writes are
	// idempotent).
	ErrUnavailable = errors.New("store: unavailable")
	// ErrCapacityLimit: a capacity change would break a provider limit (for
	// example DynamoDB allows at most 4 switches from provisioned to
	// on-demand per 24 hours), or a new table would exceed the provider's
	// table quota. Nothing was changed.
	ErrCapacityLimit = errors.New("store: capacity change limit reached")
	// ErrClosed: the Store has been closed.
	ErrClosed = errors.New("store: closed")
	// ErrLocked: the data directory is in use by another process.
	ErrLocked = errors.New("store: data directory locked by another process")
	// ErrInsufficientStorage: the disk holding the data has less free
	// space than the configured floor. The write was refused and nothing
	// was written; deletes and table drops are still accepted, so that
	// expiry can free the disk.
	ErrInsufficientStorage = errors.New("store: insufficient storage")
	// ErrStorageFault: the disk failed a write or a sync of data the
	// backend cannot vouch for since (a write-ahead log that may have lost
	// writes). The backend refuses every write until it is restarted,
	// when it recovers what was made durable; reads go on. A write that
	// got this error may or may not have been applied, like
	// ErrUnavailable.
	ErrStorageFault = errors.New("store: storage fault")
)

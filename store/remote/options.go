package remote

import (
	"log/slog"
	"time"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// Common is the part of a remote backend's Options that every remote
// backend has, with the same meaning; the backend's Options embeds it and
// its DefaultOptions sets the backend's own defaults. The zero value of a
// field means the backend's default.
type Common struct {
	// Timeout bounds each data operation (Get, Query, Write, ...)
	// including retries; past it the operation fails with
	// store.ErrUnavailable.
	Timeout time.Duration
	// TableTimeout bounds table operations that wait for the service
	// (creates and drops the service completes asynchronously, schema
	// agreement, capacity changes).
	TableTimeout time.Duration
	// MaxAttempts bounds the attempts of one request that the service
	// refused for load or that timed out. At most 100.
	MaxAttempts int
	// MaxBackoff caps the exponential backoff between attempts.
	MaxBackoff time.Duration
	// TTLMargin is how far past a row's last expiry its native TTL lies.
	// The service removes expired data on its own clock while ebb resolves
	// expiry on Now, so the margin is what keeps the backstop from
	// removing a row ebb still considers live when ebb's clock runs
	// behind the service's.
	TTLMargin time.Duration
	// Now is the clock for read-resolved expiry, native TTLs and the
	// capacity-switch history. Nil means time.Now.
	Now func() time.Time
	// Logger receives what the backend has to say (provider detection,
	// schema waits, retries). Nil discards.
	Logger *slog.Logger
}

// DefaultCommon returns the defaults every remote backend shares: 10 s
// per data operation, 5 minutes per table operation. The backend adds
// its attempts, backoff and margin.
func DefaultCommon() Common {
	return Common{Timeout: 10 * time.Second, TableTimeout: 5 * time.Minute}
}

// Validate checks the common options; errors wrap store.ErrInvalid and
// name backend, as the backend's own checks do.
func (c Common) Validate(backend string) error {
	if c.Timeout < 0 || c.TableTimeout < 0 || c.MaxBackoff < 0 || c.TTLMargin < 0 {
		return store.Errorf(store.ErrInvalid, "%s: negative timeout, backoff or TTL margin", backend)
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > 100 {
		return store.Errorf(store.ErrInvalid, "%s: max attempts %d outside 0..100", backend, c.MaxAttempts)
	}
	return nil
}

// WithDefaults fills the zero fields of c from d, Now with time.Now and
// Logger with a logger that discards.
func (c Common) WithDefaults(d Common) Common {
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.TableTimeout == 0 {
		c.TableTimeout = d.TableTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = d.MaxAttempts
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = d.MaxBackoff
	}
	if c.TTLMargin == 0 {
		c.TTLMargin = d.TTLMargin
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// RetryPolicy is the backoff of the requests a backend retries itself:
// full jitter over a delay doubling from base up to MaxBackoff, for
// MaxAttempts tries, so that clients throttled together spread their
// re-sends over the whole delay. The backend's retry loop decides what is
// worth retrying.
func (c Common) RetryPolicy(base time.Duration) backoff.Policy {
	return backoff.Policy{Base: base, Max: c.MaxBackoff, Attempts: c.MaxAttempts, Jitter: backoff.Full}
}

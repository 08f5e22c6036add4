package lists

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/promreg"
	"github.com/ebb-data/ebb/store"
)

// Limits of the API (API.md "Lists").
const (
	// MaxItemsPerAdd is the most items one Add accepts.
	MaxItemsPerAdd = 1000
	// MaxValueBytes is the largest item value.
	MaxValueBytes = 64 << 10
	// MaxNameBytes bounds the entity type, feature name, version and entity
	// ID, each in bytes of UTF-8.
	MaxNameBytes = 256
	// RemoveBatch is the most deletes RemoveByValue sends in one Write: a
	// middle ground between one huge delete and one delete per item, both
	// of which degrade badly on the remote backends.
	RemoveBatch = 10
	// MaxMaxItems is the largest cap on a list (Feature.MaxItems): an Add
	// to a capped list reads the list's keys, so the cap bounds that read
	// to one page of the store.
	MaxMaxItems = store.MaxLimit
)

// Errors. Each wraps the store sentinel the HTTP layer maps to its code,
// so callers may match either.
var (
	// ErrFeatureNotFound: no such list feature version.
	ErrFeatureNotFound error = store.Mark(store.ErrNotFound, "lists", "no such feature")
	// ErrFeatureConflict: the feature version changed concurrently (a
	// change lost a race with another), or its table exists with another
	// TTL after an interrupted create.
	ErrFeatureConflict error = store.Mark(store.ErrConflict, "lists", "feature changed concurrently")
)

// Options configures New. The zero value is valid.
type Options struct {
	// Now is the clock deciding which items are expired. It must be the
	// clock the Store resolves expiry with. Nil means time.Now.
	Now func() time.Time
	// Logger receives feature creations and deletions. Nil discards.
	Logger *slog.Logger
	// Registerer receives the metrics. Nil registers nothing.
	Registerer prometheus.Registerer
	// CacheTTL is how long a feature read from the meta table is trusted
	// before it is read again, so that a version another process deleted
	// and re-created with another TTL is noticed. A table found gone is
	// noticed at once regardless. Zero means DefaultCacheTTL.
	CacheTTL time.Duration
	// RewriteStarted, if set, is called after a TTL rewrite job is
	// recorded (FeatureConfig.Rewrite), so that the process running the
	// jobs starts it at once instead of at its next pass.
	RewriteStarted func()
	// RewriteBatch is how many lists one batch of a TTL rewrite visits
	// before its cursor is saved. Zero means RewritePartitions.
	RewriteBatch int
}

// DefaultCacheTTL is the default Options.CacheTTL: store.DefaultCacheTTL,
// ebb's one bound on acting on configuration another replica changed.
const DefaultCacheTTL = store.DefaultCacheTTL

// DefaultOptions returns the options New applies to zero fields (Now
// excepted).
func DefaultOptions() Options {
	return Options{CacheTTL: DefaultCacheTTL}
}

// Validate checks the options; errors wrap store.ErrInvalid.
func (o Options) Validate() error {
	if o.RewriteBatch < 0 || o.RewriteBatch > store.MaxLimit {
		return store.Errorf(store.ErrInvalid, "lists: RewriteBatch %d outside 0..%d", o.RewriteBatch, store.MaxLimit)
	}
	if o.CacheTTL < 0 {
		return store.Errorf(store.ErrInvalid, "lists: negative CacheTTL")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.RewriteBatch == 0 {
		o.RewriteBatch = RewritePartitions
	}
	return o
}

// metrics count items through the service.
type metrics struct {
	written prometheus.Counter
	skipped prometheus.Counter
	read    prometheus.Counter
	removed prometheus.Counter
	trimmed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_list_items_written_total",
			Help: "List items written.",
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_list_items_skipped_expired_total",
			Help: "List items not written because they had already expired when they arrived.",
		}),
		read: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_list_items_read_total",
			Help: "List items returned by reads.",
		}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_list_items_removed_by_value_total",
			Help: "List items deleted by value: the items of an entity's list that held the value removed.",
		}),
		trimmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_list_items_trimmed_total",
			Help: "List items removed by their feature's max_items: the oldest items beyond the cap, deleted by the add that passed it.",
		}),
	}
	if err := promreg.Register(reg, m.written, m.skipped, m.read, m.removed, m.trimmed); err != nil {
		return nil, fmt.Errorf("lists: register metrics: %w", err)
	}
	return m, nil
}

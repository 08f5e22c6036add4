package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
)

// IndexConfig is the configuration of a time-sharded index, the body of
// PUT /v1/indexes/{name}. Retention, runway and capacity of an existing
// index change by putting it again; changed buckets take effect at a
// shard boundary after the change (Index.Layouts).
type IndexConfig struct {
	// TableBucket is the time width of a shard: whole seconds.
	TableBucket time.Duration `json:"table_bucket"`
	// PartitionBucket is the width of a partition within a shard: whole
	// milliseconds, dividing TableBucket.
	PartitionBucket time.Duration `json:"partition_bucket"`
	// Retention is how long an event lives after its timestamp.
	Retention time.Duration `json:"retention"`
	// Runway is how many shards are kept ready after the one holding
	// now; zero takes the server's default, 2.
	Runway int `json:"runway,omitempty"`
	// Capacity is the capacity policy; nil leaves every shard on-demand.
	Capacity *CapacityPolicy `json:"capacity,omitempty"`
	// Archive, when set, keeps a copy of each shard (Parquet and a
	// manifest) before its drop; it can change at any time.
	Archive *ArchiveConfig `json:"archive,omitempty"`
}

// ArchiveConfig says where an index's shards are archived before their
// drop: To is file:///DIR or s3://bucket/prefix.
type ArchiveConfig struct {
	To string `json:"to"`
}

// MarshalJSON writes an IndexConfig as the API does, durations as Go duration strings.
func (c IndexConfig) MarshalJSON() ([]byte, error) {
	type plain IndexConfig
	return json.Marshal(struct {
		plain
		TableBucket     duration `json:"table_bucket"`
		PartitionBucket duration `json:"partition_bucket"`
		Retention       duration `json:"retention"`
	}{plain(c), duration(c.TableBucket), duration(c.PartitionBucket), duration(c.Retention)})
}

// UnmarshalJSON reads an IndexConfig as the API writes it.
func (c *IndexConfig) UnmarshalJSON(b []byte) error {
	type plain IndexConfig
	w := struct {
		*plain
		TableBucket     duration `json:"table_bucket"`
		PartitionBucket duration `json:"partition_bucket"`
		Retention       duration `json:"retention"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	c.TableBucket, c.PartitionBucket, c.Retention = time.Duration(w.TableBucket), time.Duration(w.PartitionBucket), time.Duration(w.Retention)
	return nil
}

// CapacityPolicy provisions an index's hot shard (the one holding now) at
// the hot units and pre-warms the next one to the peak units, on backends
// with capacity modes; every other shard stays on-demand. ColdAfter, on
// DynamoDB, keeps every shard that ended at least that long ago in the
// Standard-IA table class. Either part may be set alone.
type CapacityPolicy struct {
	HotReadUnits   int64         `json:"hot_read_units,omitempty"`
	HotWriteUnits  int64         `json:"hot_write_units,omitempty"`
	PeakReadUnits  int64         `json:"peak_read_units,omitempty"`
	PeakWriteUnits int64         `json:"peak_write_units,omitempty"`
	ColdAfter      time.Duration `json:"cold_after,omitempty"`
}

// MarshalJSON writes a CapacityPolicy as the API does, cold_after as a Go
// duration string.
func (c CapacityPolicy) MarshalJSON() ([]byte, error) {
	type plain CapacityPolicy
	return json.Marshal(struct {
		plain
		ColdAfter duration `json:"cold_after,omitempty"`
	}{plain(c), duration(c.ColdAfter)})
}

// UnmarshalJSON reads a CapacityPolicy as the API writes it.
func (c *CapacityPolicy) UnmarshalJSON(b []byte) error {
	type plain CapacityPolicy
	w := struct {
		*plain
		ColdAfter duration `json:"cold_after,omitempty"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	c.ColdAfter = time.Duration(w.ColdAfter)
	return nil
}

// Index is a time-sharded index as the server reports it.
type Index struct {
	Name            string        `json:"name"`
	TableBucket     time.Duration `json:"table_bucket"`
	PartitionBucket time.Duration `json:"partition_bucket"`
	Retention       time.Duration `json:"retention"`
	// HeldRetention is the longer retention the index keeps until the
	// next apply, after its retention was shortened; zero otherwise.
	HeldRetention time.Duration   `json:"held_retention,omitempty"`
	Runway        int             `json:"runway"`
	Capacity      *CapacityPolicy `json:"capacity,omitempty"`
	// Layouts are the index's layout epochs, oldest first, once its
	// buckets changed: each in force from its From until the next one's;
	// the last is TableBucket and PartitionBucket. Nil for an index with
	// one layout.
	Layouts []Layout       `json:"layouts,omitempty"`
	Archive *ArchiveConfig `json:"archive,omitempty"`
	// Shards are sorted by start.
	Shards []Shard `json:"shards"`
	// RunwayRemaining is the time until the end of the last existing
	// shard.
	RunwayRemaining time.Duration `json:"runway_remaining"`
}

// MarshalJSON writes an Index as the API does, durations as Go duration strings.
func (x Index) MarshalJSON() ([]byte, error) {
	type plain Index
	if x.Shards == nil {
		x.Shards = []Shard{}
	}
	return json.Marshal(struct {
		plain
		TableBucket     duration `json:"table_bucket"`
		PartitionBucket duration `json:"partition_bucket"`
		Retention       duration `json:"retention"`
		HeldRetention   duration `json:"held_retention,omitempty"`
		RunwayRemaining duration `json:"runway_remaining"`
	}{plain(x), duration(x.TableBucket), duration(x.PartitionBucket), duration(x.Retention), duration(x.HeldRetention), duration(x.RunwayRemaining)})
}

// UnmarshalJSON reads an Index as the API writes it.
func (x *Index) UnmarshalJSON(b []byte) error {
	type plain Index
	w := struct {
		*plain
		TableBucket     duration `json:"table_bucket"`
		PartitionBucket duration `json:"partition_bucket"`
		Retention       duration `json:"retention"`
		HeldRetention   duration `json:"held_retention,omitempty"`
		RunwayRemaining duration `json:"runway_remaining"`
	}{plain: (*plain)(x)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	x.TableBucket, x.PartitionBucket, x.Retention = time.Duration(w.TableBucket), time.Duration(w.PartitionBucket), time.Duration(w.Retention)
	x.HeldRetention = time.Duration(w.HeldRetention)
	x.RunwayRemaining = time.Duration(w.RunwayRemaining)
	return nil
}

// Layout is one layout epoch of an index.
type Layout struct {
	From            time.Time     `json:"from"`
	TableBucket     time.Duration `json:"table_bucket"`
	PartitionBucket time.Duration `json:"partition_bucket"`
}

// MarshalJSON writes a Layout as the API does, durations as Go duration strings.
func (l Layout) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		From            time.Time `json:"from"`
		TableBucket     duration  `json:"table_bucket"`
		PartitionBucket duration  `json:"partition_bucket"`
	}{l.From, duration(l.TableBucket), duration(l.PartitionBucket)})
}

// UnmarshalJSON reads a Layout as the API writes it.
func (l *Layout) UnmarshalJSON(b []byte) error {
	var w struct {
		From            time.Time `json:"from"`
		TableBucket     duration  `json:"table_bucket"`
		PartitionBucket duration  `json:"partition_bucket"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = Layout{From: w.From, TableBucket: time.Duration(w.TableBucket), PartitionBucket: time.Duration(w.PartitionBucket)}
	return nil
}

// Shard states, relative to now.
const (
	ShardPast   = "past"
	ShardHot    = "hot"
	ShardFuture = "future"
)

// Shard is one table of an index, holding the events of [Start, End).
type Shard struct {
	Table string    `json:"table"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// State is ShardPast, ShardHot or ShardFuture.
	State string `json:"state"`
	// Capacity is "on_demand" or "provisioned".
	Capacity string `json:"capacity"`
	// Class is the shard's table class, "standard" or "standard_ia", where
	// the backend has classes and one was set.
	Class string `json:"class,omitempty"`
	// Rows and Bytes are what the shard holds, as the backend counts
	// them; set by IndexStats only.
	Rows  *int64 `json:"rows,omitempty"`
	Bytes *int64 `json:"bytes,omitempty"`
}

// Event is one event of an index, keyed by (IndexID, Timestamp, EventID).
type Event struct {
	// IndexID and EventID are 1..256 bytes of UTF-8, any characters.
	IndexID string `json:"index_id"`
	EventID string `json:"event_id"`
	// Timestamp is stored to the millisecond.
	Timestamp time.Time `json:"timestamp"`
	// Payload is optional.
	Payload []byte `json:"payload"`
	// TTL, when not zero, is the event's own lifetime: it is hidden at
	// Timestamp + TTL instead of Timestamp + the index's retention, and
	// must be whole milliseconds shorter than the retention. Written only;
	// read events leave it zero.
	TTL time.Duration `json:"-"`
}

// eventWire is an Event as WriteEvents sends it, its TTL as a duration
// string and absent when zero.
type eventWire struct {
	IndexID   string    `json:"index_id"`
	EventID   string    `json:"event_id"`
	Timestamp time.Time `json:"timestamp"`
	Payload   []byte    `json:"payload"`
	TTL       string    `json:"ttl,omitempty"`
}

// EventQuery selects the events of one IndexID in [From, To).
type EventQuery struct {
	// IndexID is required.
	IndexID string
	// From and To bound the range [From, To); a zero time leaves that
	// side unbounded.
	From, To time.Time
	// Desc orders by (timestamp, event_id) descending instead of
	// ascending.
	Desc bool
	// Limit is the most events in a page, 1..10000; zero is the server's
	// default, 100.
	Limit int
	// PageToken resumes after the last event of a previous page (its
	// NextPageToken), for the same index and order.
	PageToken string
}

// EventPage is one page of a query.
type EventPage struct {
	Events []Event `json:"events"`
	// NextPageToken, when not empty, resumes after the last event, or
	// where the server's read budget (256 partitions a request) ran out:
	// a page may then hold fewer than Limit events, or none, and the next
	// may still be empty. Only an empty token ends the query.
	NextPageToken string `json:"next_page_token,omitempty"`
}

// ReconcileOptions are the query of POST /v1/indexes/{name}/reconcile.
type ReconcileOptions struct {
	// DryRun plans without applying.
	DryRun bool
	// AllowClockJump confirms the clock after it moved forward more than
	// 24 h, lifting the guard that holds every drop back.
	AllowClockJump bool
}

// Plan is what the shard manager planned for an index and, unless it was
// a dry run, applied.
type Plan struct {
	Actions []Action `json:"actions"`
	// Unrecognized lists tables with the index's prefix that are not its
	// shards; they are left alone.
	Unrecognized []string `json:"unrecognized,omitempty"`
	// Transitions are the index's layout changes, each with its first
	// shard and whether that shard exists.
	Transitions []Transition `json:"transitions,omitempty"`
	Applied     bool         `json:"applied"`
}

// Transition is a layout change as a plan reports it: from From on, the
// index's shards have the new layout, the first of them Table.
type Transition struct {
	From    time.Time `json:"from"`
	Table   string    `json:"table"`
	Change  string    `json:"change"`
	Created bool      `json:"created"`
}

// Shard actions (Action.Op).
const (
	OpCreate      = "create"
	OpDrop        = "drop"
	OpSetCapacity = "set_capacity"
	OpPrewarm     = "prewarm"
)

// Action is one planned shard change.
type Action struct {
	Op     string `json:"op"`
	Table  string `json:"table"`
	Reason string `json:"reason"`
	// Capacity is the target of a set_capacity or prewarm action.
	Capacity string `json:"capacity,omitempty"`
	// Class is the target of a set_class action.
	Class string `json:"class,omitempty"`
	// Deferred actions are held back by a guard or a limit, and not
	// applied.
	Deferred bool `json:"deferred,omitempty"`
	// Error says why an applied action failed; the others were applied.
	Error string `json:"error,omitempty"`
	// Rows and Bytes are what a drop destroys, as the backend reports
	// them (estimates on some backends); nil for other actions.
	Rows  *int64 `json:"rows,omitempty"`
	Bytes *int64 `json:"bytes,omitempty"`
}

// Pending counts the actions that applying the plan would carry out
// (deferred ones are held back), and the drops among them.
func (p Plan) Pending() (actions, drops int) {
	for _, a := range p.Actions {
		if a.Deferred {
			continue
		}
		actions++
		if a.Op == OpDrop {
			drops++
		}
	}
	return actions, drops
}

// Failed counts the actions that failed when the plan was applied.
func (p Plan) Failed() int {
	n := 0
	for _, a := range p.Actions {
		if a.Error != "" {
			n++
		}
	}
	return n
}

func indexPath(index string, rest ...any) (string, error) {
	return urlPath(append([]any{"/v1/indexes/", name{"index name", index}}, rest...)...)
}

// CreateIndex creates an index and its shards (PUT /v1/indexes/{name}).
// created is false when an identical index already existed; one with
// another configuration is ErrConflict.
func (c *Client) CreateIndex(ctx context.Context, index string, cfg IndexConfig) (idx Index, created bool, err error) {
	p, err := indexPath(index)
	if err != nil {
		return Index{}, false, err
	}
	status, err := c.do(ctx, http.MethodPut, p, nil, cfg, &idx)
	return idx, status == http.StatusCreated, err
}

// Index returns an index and its shards (GET /v1/indexes/{name}).
func (c *Client) Index(ctx context.Context, index string) (Index, error) {
	return c.getIndex(ctx, index, nil)
}

// IndexStats is Index with each shard's rows and bytes
// (GET /v1/indexes/{name}?stats=true): one backend call per shard.
func (c *Client) IndexStats(ctx context.Context, index string) (Index, error) {
	return c.getIndex(ctx, index, url.Values{"stats": {"true"}})
}

func (c *Client) getIndex(ctx context.Context, index string, v url.Values) (Index, error) {
	p, err := indexPath(index)
	if err != nil {
		return Index{}, err
	}
	var idx Index
	_, err = c.do(ctx, http.MethodGet, p, v, nil, &idx)
	return idx, err
}

// Indexes returns every index, sorted by name (GET /v1/indexes). With an
// auth file it needs the admin or *:* scope.
func (c *Client) Indexes(ctx context.Context) ([]Index, error) {
	var out struct {
		Indexes []Index `json:"indexes"`
	}
	_, err := c.do(ctx, http.MethodGet, "/v1/indexes", nil, nil, &out)
	return out.Indexes, err
}

// DeleteIndex drops every shard of an index and its configuration
// (DELETE /v1/indexes/{name}).
func (c *Client) DeleteIndex(ctx context.Context, index string) error {
	p, err := indexPath(index)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil, nil)
	return err
}

// WriteEvents writes up to 10000 events (POST /v1/indexes/{name}/events)
// and returns how many were written. The batch is all or nothing: an
// invalid, expired (ErrExpired) or shardless (ErrNoShard) event refuses the
// whole batch, and the message names its position.
func (c *Client) WriteEvents(ctx context.Context, index string, events []Event) (int, error) {
	p, err := indexPath(index, "/events")
	if err != nil {
		return 0, err
	}
	wire := make([]eventWire, len(events))
	for i, e := range events {
		wire[i] = eventWire{IndexID: e.IndexID, EventID: e.EventID, Timestamp: e.Timestamp, Payload: e.Payload}
		if e.TTL != 0 {
			wire[i].TTL = FormatDuration(e.TTL)
		}
	}
	var out struct {
		Written int `json:"written"`
	}
	_, err = c.do(ctx, http.MethodPost, p, nil, map[string][]eventWire{"events": wire}, &out)
	return out.Written, err
}

// QueryEvents returns one page of events (GET /v1/indexes/{name}/events).
func (c *Client) QueryEvents(ctx context.Context, index string, q EventQuery) (EventPage, error) {
	p, err := indexPath(index, "/events")
	if err != nil {
		return EventPage{}, err
	}
	v := url.Values{"index_id": {q.IndexID}}
	if !q.From.IsZero() {
		v.Set("from", timefmt.Format(q.From))
	}
	if !q.To.IsZero() {
		v.Set("to", timefmt.Format(q.To))
	}
	if q.Desc {
		v.Set("order", "desc")
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.PageToken != "" {
		v.Set("page_token", q.PageToken)
	}
	var page EventPage
	_, err = c.do(ctx, http.MethodGet, p, v, nil, &page)
	return page, err
}

// Events iterates over every event q selects, page after page, q.Limit
// being the page size. It stops at the first error, which it yields with a
// zero Event:
//
//	for ev, err := range c.Events(ctx, "events", client.EventQuery{IndexID: "acct_1"}) {
//		if err != nil {
//			return err
//		}
//		...
//	}
func (c *Client) Events(ctx context.Context, index string, q EventQuery) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			page, err := c.QueryEvents(ctx, index, q)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range page.Events {
				if !yield(ev, nil) {
					return
				}
			}
			if page.NextPageToken == "" {
				return
			}
			q.PageToken = page.NextPageToken
		}
	}
}

// Reconcile plans the index's shard changes for now and, unless
// o.DryRun, applies them (POST /v1/indexes/{name}/reconcile). Actions that
// failed carry an Error; the others were applied.
func (c *Client) Reconcile(ctx context.Context, index string, o ReconcileOptions) (Plan, error) {
	p, err := indexPath(index, "/reconcile")
	if err != nil {
		return Plan{}, err
	}
	v := url.Values{"dry_run": {strconv.FormatBool(o.DryRun)}}
	if o.AllowClockJump {
		v.Set("allow_clock_jump", "true")
	}
	var plan Plan
	_, err = c.do(ctx, http.MethodPost, p, v, nil, &plan)
	return plan, err
}

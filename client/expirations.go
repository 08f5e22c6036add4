package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Expiration is one entry of the log of expirations (GET
// /v1/expirations): a row the server's sweeper physically removed, or a
// shard its shard manager dropped.
type Expiration struct {
	// Cursor resumes a read just after this entry.
	Cursor string `json:"cursor"`
	// Type is "row" or "shard".
	Type string `json:"type"`
	// Kind and Name say what the entry belongs to: "index" and the index
	// of a shard, "list" and the entity type of a list item, "table" and
	// the shared table of an item, "store" and a physical table.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Feature and Version name a list item's feature version.
	Feature string `json:"feature,omitempty"`
	Version string `json:"version,omitempty"`
	// Key is a row's key: [entity id, item key] for a list item, [key]
	// for a shared-table item.
	Key       []string  `json:"key,omitempty"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	RemovedAt time.Time `json:"removed_at"`
	// Shard is a dropped shard's table, From and To its time range.
	Shard string    `json:"shard,omitempty"`
	From  time.Time `json:"from,omitzero"`
	To    time.Time `json:"to,omitzero"`
	// Rows is how many rows a dropped shard held, when known.
	Rows *int64 `json:"rows,omitempty"`
	// Archive is where the shard was archived before its drop, if it was.
	Archive string `json:"archive,omitempty"`
}

// ExpirationsPage is one answer of GET /v1/expirations.
type ExpirationsPage struct {
	Expirations []Expiration `json:"expirations"`
	// Next resumes after every entry read, those the token may not see
	// included.
	Next string `json:"next"`
}

// ExpirationsQuery selects a page of the log.
type ExpirationsQuery struct {
	// After is a cursor from an earlier page or entry; empty starts at
	// the oldest entry the server retains.
	After string
	// Limit is the most entries; zero takes the server's default (100).
	Limit int
	// Timeout, if positive, is how long the server waits for an entry when
	// there is none yet (a long poll), at most 5m.
	Timeout time.Duration
}

// Expirations reads a page of the log of expirations after q.After, the
// entries the token may see (GET /v1/expirations).
func (c *Client) Expirations(ctx context.Context, q ExpirationsQuery) (ExpirationsPage, error) {
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Timeout > 0 {
		v.Set("timeout", q.Timeout.String())
	}
	var out ExpirationsPage
	_, err := c.do(ctx, http.MethodGet, "/v1/expirations", v, nil, &out)
	return out, err
}

// WatchExpirations long-polls the log from after, calling fn with each
// entry in order, until ctx ends or fn or a read fails; it returns the
// cursor after the last entry fn accepted, from which a later watch goes
// on. wait is each poll's timeout (zero: 30s).
func (c *Client) WatchExpirations(ctx context.Context, after string, wait time.Duration, fn func(Expiration) error) (string, error) {
	if wait <= 0 {
		wait = 30 * time.Second
	}
	for {
		p, err := c.Expirations(ctx, ExpirationsQuery{After: after, Timeout: wait})
		if err != nil {
			return after, err
		}
		for _, e := range p.Expirations {
			if err := fn(e); err != nil {
				return after, err
			}
			after = e.Cursor
		}
		after = p.Next
	}
}

package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
)

// EventErase selects the events EraseEvents removes: every event of
// IndexID in [From, To), or, when EventID is set, the one event keyed by
// (IndexID, Timestamp, EventID).
type EventErase struct {
	// IndexID is required.
	IndexID string
	// From and To bound a range erase, [From, To); a zero time leaves that
	// side unbounded, so that with both zero every event of IndexID still
	// held in any shard is erased. Both must be zero when EventID is set.
	From, To time.Time
	// Timestamp and EventID, when EventID is set, select one event.
	Timestamp time.Time
	EventID   string
	// Progress, when set on a range erase, makes EraseEvents erase one
	// shard per request, after reading the index's shards, and call
	// Progress after each: a long erase then reports how far it is, and
	// no one request runs long. Without it the server erases the whole
	// range in one request.
	Progress func(EraseProgress)
}

// EraseProgress is how far a range erase is.
type EraseProgress struct {
	// Shard is the shard table just erased and Removed the events removed
	// from it.
	Shard   string
	Removed int64
	// Done of Total shards are erased; TotalRemoved events so far.
	Done, Total  int
	TotalRemoved int64
}

// EraseResult is what an erase removed.
type EraseResult struct {
	// Removed counts the events found and deleted; an erase repeated
	// removes 0.
	Removed int64 `json:"removed"`
	// Shards counts the shards visited.
	Shards int `json:"shards"`
}

// EraseEvents deletes one event, or every event of an index_id over a
// time range, from an index (DELETE /v1/indexes/{name}/events), for an
// erasure request. It is idempotent. Every event written before the call
// and inside the range is gone once it returns nil; see docs/api.md
// "Erase events" for the guarantee against concurrent writes and
// docs/backends.md for when the data leaves the disk. An error may come
// after a part was erased; calling again finishes it.
func (c *Client) EraseEvents(ctx context.Context, index string, e EventErase) (EraseResult, error) {
	if e.Progress == nil || e.EventID != "" || !e.Timestamp.IsZero() || e.IndexID == "" {
		return c.eraseEvents(ctx, index, e)
	}
	idx, err := c.Index(ctx, index)
	if err != nil {
		return EraseResult{}, err
	}
	if !e.From.IsZero() && !e.To.IsZero() && !e.From.Before(e.To) {
		// The server says what is wrong, and deletes nothing.
		return c.eraseEvents(ctx, index, e)
	}
	var shards []Shard
	for _, sh := range idx.Shards {
		if (e.To.IsZero() || sh.Start.Before(e.To)) && (e.From.IsZero() || sh.End.After(e.From)) {
			shards = append(shards, sh)
		}
	}
	var res EraseResult
	for i, sh := range shards {
		part := e
		part.From, part.To = sh.Start, sh.End
		if !e.From.IsZero() && e.From.After(part.From) {
			part.From = e.From
		}
		if !e.To.IsZero() && e.To.Before(part.To) {
			part.To = e.To
		}
		r, err := c.eraseEvents(ctx, index, part)
		res.Removed += r.Removed
		if err != nil {
			return res, err
		}
		res.Shards += r.Shards
		e.Progress(EraseProgress{Shard: sh.Table, Removed: r.Removed, Done: i + 1, Total: len(shards), TotalRemoved: res.Removed})
	}
	return res, nil
}

// eraseEvents is one DELETE request.
func (c *Client) eraseEvents(ctx context.Context, index string, e EventErase) (EraseResult, error) {
	p, err := indexPath(index, "/events")
	if err != nil {
		return EraseResult{}, err
	}
	v := url.Values{"index_id": {e.IndexID}}
	for name, t := range map[string]time.Time{"from": e.From, "to": e.To, "timestamp": e.Timestamp} {
		if !t.IsZero() {
			v.Set(name, timefmt.Format(t))
		}
	}
	if e.EventID != "" {
		v.Set("event_id", e.EventID)
	}
	var out EraseResult
	_, err = c.do(ctx, http.MethodDelete, p, v, nil, &out)
	return out, err
}

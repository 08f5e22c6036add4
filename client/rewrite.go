package client

import (
	"encoding/json"
	"time"
)

// TTLRewrite is a TTL rewrite: the background job a TTL change with
// Rewrite set starts, giving the rows already written the new TTL. It is
// the Rewrite of a ListFeature or Table read one at a time.
type TTLRewrite struct {
	// State is "running", "done" or "superseded" (the TTL changed again,
	// or the feature was deleted, before the job finished).
	State string `json:"state"`
	// TTL is the TTL the job gives the rows.
	TTL time.Duration `json:"ttl"`
	// Scanned counts rows visited; Rewritten those given a new expiry;
	// Removed those deleted because their new expiry had passed; Skipped
	// those left as they were.
	Scanned   int64     `json:"scanned"`
	Rewritten int64     `json:"rewritten"`
	Removed   int64     `json:"removed"`
	Skipped   int64     `json:"skipped"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// FinishedAt is zero while the job runs.
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Running reports whether the job has rows left to visit.
func (r TTLRewrite) Running() bool { return r.State == "running" }

// MarshalJSON writes a TTLRewrite as the API does, durations as Go duration strings.
func (r TTLRewrite) MarshalJSON() ([]byte, error) {
	type plain TTLRewrite
	return json.Marshal(struct {
		plain
		TTL duration `json:"ttl"`
	}{plain(r), duration(r.TTL)})
}

// UnmarshalJSON reads a TTLRewrite as the API writes it.
func (r *TTLRewrite) UnmarshalJSON(b []byte) error {
	type plain TTLRewrite
	w := struct {
		*plain
		TTL duration `json:"ttl"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	r.TTL = time.Duration(w.TTL)
	return nil
}

package server

import (
	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/rewrite"
	"github.com/ebb-data/ebb/internal/timefmt"
)

// rewriteJSON is a TTL rewrite on the wire: the "rewrite" member of a
// list feature version or a shared table, present once one was asked for
// with "rewrite": true.
type rewriteJSON struct {
	// State is running, done or superseded.
	State string `json:"state"`
	// TTL is the TTL the job gives the rows.
	TTL       string `json:"ttl"`
	Scanned   int64  `json:"scanned"`
	Rewritten int64  `json:"rewritten"`
	Removed   int64  `json:"removed"`
	Skipped   int64  `json:"skipped"`
	StartedAt string `json:"started_at"`
	UpdatedAt string `json:"updated_at"`
	// FinishedAt is absent while the job runs.
	FinishedAt string `json:"finished_at,omitempty"`
}

// rewriteView is j on the wire; nil when there is none (ok false).
func rewriteView(j rewrite.Job, ok bool) *rewriteJSON {
	if !ok {
		return nil
	}
	out := &rewriteJSON{
		State: j.State, TTL: durfmt.Format(j.TTL),
		Scanned: j.Scanned, Rewritten: j.Rewritten, Removed: j.Removed, Skipped: j.Skipped,
		StartedAt: timefmt.Format(j.Started), UpdatedAt: timefmt.Format(j.Updated),
	}
	if !j.Finished.IsZero() {
		out.FinishedAt = timefmt.Format(j.Finished)
	}
	return out
}

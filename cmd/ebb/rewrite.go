package main

import (
	"fmt"

	ebbclient "github.com/ebb-data/ebb/client"
)

// rewriteLine describes a TTL rewrite's progress in one line.
func rewriteLine(r *ebbclient.TTLRewrite) string {
	line := fmt.Sprintf("rewrite to ttl %s: %s, %d rows visited (%d rewritten, %d removed, %d skipped), started %s",
		ebbclient.FormatDuration(r.TTL), r.State, r.Scanned, r.Rewritten, r.Removed, r.Skipped, formatTime(r.StartedAt))
	if !r.FinishedAt.IsZero() {
		line += ", finished " + formatTime(r.FinishedAt)
	}
	return line
}

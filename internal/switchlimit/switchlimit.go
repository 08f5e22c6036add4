// Package switchlimit checks a provider's limit on capacity-mode switches
// (DynamoDB: 4 switches to on-demand per 24 h; Amazon Keyspaces: 1) against
// the record of switches a backend keeps, so that the limit surfaces as
// store.ErrCapacityLimit before anything is sent.
package switchlimit

import "time"

// Allowed is the pure check: history holds the Unix ms times of earlier
// switches. It returns the history within the window (older entries are
// forgotten) and whether one more switch at now stays within max
// switches per window.
func Allowed(history []int64, now time.Time, window time.Duration, max int) ([]int64, bool) {
	cutoff := now.Add(-window).UnixMilli()
	var recent []int64
	for _, t := range history {
		if t > cutoff {
			recent = append(recent, t)
		}
	}
	return recent, len(recent) < max
}

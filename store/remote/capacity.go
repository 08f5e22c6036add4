package remote

import (
	"time"

	"github.com/ebb-data/ebb/store"
)

// checkCapacity refuses a capacity setting that no provider accepts,
// before anything is sent: an unknown mode, provisioned capacity without
// positive read and write units, negative warm throughput. Errors wrap
// store.ErrInvalid.
func checkCapacity(c store.Capacity) error {
	switch {
	case c.Mode != store.OnDemand && c.Mode != store.Provisioned:
		return store.Errorf(store.ErrInvalid, "unknown capacity mode %d", c.Mode)
	case c.Mode == store.Provisioned && (c.ReadUnits <= 0 || c.WriteUnits <= 0):
		return store.Errorf(store.ErrInvalid, "provisioned capacity needs positive read and write units")
	case c.WarmRead < 0 || c.WarmWrite < 0:
		return store.Errorf(store.ErrInvalid, "negative warm throughput")
	}
	return nil
}

// SwitchLimit is a provider's limit on capacity-mode switches: at most Max
// within any Window (DynamoDB: 4 switches to on-demand per 24 h; Amazon
// Keyspaces: 1 switch either way). A backend checks it against the record
// of switches it keeps in its catalog, so that the limit surfaces as
// store.ErrCapacityLimit before anything is sent.
type SwitchLimit struct {
	Max    int
	Window time.Duration
}

// Allowed is the pure check: history holds the Unix ms times of earlier
// switches. It returns the history within the window (older entries are
// forgotten; one exactly Window old has left it) and whether one more
// switch at now stays within the limit.
func (l SwitchLimit) Allowed(history []int64, now time.Time) ([]int64, bool) {
	cutoff := now.Add(-l.Window).UnixMilli()
	var recent []int64
	for _, t := range history {
		if t > cutoff {
			recent = append(recent, t)
		}
	}
	return recent, len(recent) < l.Max
}

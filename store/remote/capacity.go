package remote

import (
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

package server

import (
	"net/http"

	"github.com/ebb-data/ebb/store"
)

// parseExpiryMode parses the "expiry" field of a list feature's or shared
// table's PUT body: "sweep", "native" or "drop"; absent or empty means the
// backend's default on create and no change on an existing one. Other
// values are 400 invalid_argument. A mode the backend cannot honour
// (native without native TTL) is refused later, by the feature, with
// store.ErrNativeTTLUnsupported, also a 400.
func parseExpiryMode(s string) (store.ExpiryMode, error) {
	m, err := store.ParseExpiryMode(s)
	if err != nil {
		return 0, Errorf(http.StatusBadRequest, CodeInvalidArgument, "expiry %q: want \"sweep\", \"native\" or \"drop\"", s)
	}
	return m, nil
}

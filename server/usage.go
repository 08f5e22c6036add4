package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/meter"
)

// UsageReporter is implemented by an Admin that meters the request units
// its store operations would bill; *ebb.DB does. With it the Server serves
// GET /v1/admin/usage.
type UsageReporter interface {
	// Usage returns what was metered since the process opened its store
	// and, with storage, what each class of table holds.
	Usage(ctx context.Context, storage bool) (meter.Usage, error)
}

var _ UsageReporter = (*ebb.DB)(nil)

// adminUsage answers the metered request units per table class, operation
// and provider model; with storage=true, also what each class of table
// physically holds.
func (s *Server) adminUsage(w http.ResponseWriter, r *http.Request) error {
	var storage bool
	switch v := r.URL.Query().Get("storage"); v {
	case "", "false":
	case "true":
		storage = true
	default:
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "storage %q: want true or false", v)
	}
	u, err := s.admin.(UsageReporter).Usage(r.Context(), storage)
	if errors.Is(err, ebb.ErrNoMetering) {
		return Errorf(http.StatusNotFound, CodeNotFound, "metering is off on this server")
	}
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, u)
}

package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/cost"
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

// usageAnswer is GET /v1/admin/usage's answer: the metered usage and, with
// cost=true, its projection onto a month of each provider's prices.
type usageAnswer struct {
	meter.Usage
	// Recent is what was metered over the projection window: the last
	// ten minutes or more, or since the start when shorter
	// (usagewindow.go). The cost and the dashboard's rates read it.
	Recent *meter.Usage `json:"recent,omitempty"`
	Cost   *cost.Live   `json:"cost,omitempty"`
}

// adminUsage answers the metered request units per table class, operation
// and provider model; with storage=true, also what each class of table
// physically holds; with cost=true, what the rate of use over the last ten
// minutes or more (since the start when shorter) costs a month on the
// price sheet built into ebb (package cost), as `ebb cost --from` projects
// a usage, with the expiry modes compared and the cheapest one whose
// promptness is within gone_within (a duration; absent: no bound) named.
func (s *Server) adminUsage(w http.ResponseWriter, r *http.Request) error {
	storage, err := boolParam(r, "storage")
	if err != nil {
		return err
	}
	withCost, err := boolParam(r, "cost")
	if err != nil {
		return err
	}
	var goneWithin time.Duration
	if v := r.URL.Query().Get("gone_within"); v != "" {
		if goneWithin, err = ParseDuration(v); err != nil {
			return err
		}
	}
	u, err := s.admin.(UsageReporter).Usage(r.Context(), storage)
	if errors.Is(err, ebb.ErrNoMetering) {
		return Errorf(http.StatusNotFound, CodeNotFound, "metering is off on this server")
	}
	if err != nil {
		return err
	}
	recent := s.usage.recent(u)
	answer := usageAnswer{Usage: u, Recent: &recent}
	if withCost && recent.At.After(recent.Since) {
		if answer.Cost, err = cost.Project(recent, cost.DefaultPrices()); err != nil {
			return err
		}
		answer.Cost.CompareModes(u, cost.DefaultPrices(), goneWithin)
	}
	return WriteJSON(w, http.StatusOK, answer)
}

// boolParam reads an optional query parameter that is "true" or "false".
func boolParam(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, Errorf(http.StatusBadRequest, CodeInvalidArgument, "%s %q: want true or false", name, v)
	}
}

package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/ebb-data/ebb/cost"
	"github.com/ebb-data/ebb/meter"
)

// Usage returns the request units the server metered since it started,
// per table class, operation and provider model (GET /v1/admin/usage;
// scope admin). With storage, it also returns what each class of table
// physically holds, which on a remote backend scans every table.
func (c *Client) Usage(ctx context.Context, storage bool) (meter.Usage, error) {
	var out meter.Usage
	var q url.Values
	if storage {
		q = url.Values{"storage": {"true"}}
	}
	_, err := c.do(ctx, http.MethodGet, "/v1/admin/usage", q, nil, &out)
	return out, err
}

// UsageCost returns what Usage returns and that usage's rate projected onto
// a month of each provider's on-demand prices, on the price sheet built into
// the server (GET /v1/admin/usage?cost=true). The projection is nil while
// the usage covers no time.
func (c *Client) UsageCost(ctx context.Context, storage bool) (meter.Usage, *cost.Live, error) {
	var out struct {
		meter.Usage
		Cost *cost.Live `json:"cost"`
	}
	q := url.Values{"cost": {"true"}}
	if storage {
		q.Set("storage", "true")
	}
	_, err := c.do(ctx, http.MethodGet, "/v1/admin/usage", q, nil, &out)
	return out.Usage, out.Cost, err
}

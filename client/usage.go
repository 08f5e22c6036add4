package client

import (
	"context"
	"net/http"
	"net/url"

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

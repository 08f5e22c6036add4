package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
)

// DefaultListVersion is the path segment of a list feature's default
// (empty) version. A ListFeatureID with Version "" is sent as it.
const DefaultListVersion = "_"

// ListFeatureID names a list feature version. Names are 1 to 256 bytes of
// UTF-8, any characters; Version may be empty, the default version (which
// the version "_" also names).
type ListFeatureID struct {
	EntityType string `json:"entity_type"`
	Feature    string `json:"feature"`
	Version    string `json:"version"`
}

// ListFeature is a list feature version: each item of its lists expires
// TTL after its own timestamp.
type ListFeature struct {
	EntityType string        `json:"entity_type"`
	Feature    string        `json:"feature"`
	Version    string        `json:"version"`
	TTL        time.Duration `json:"ttl"`
	CreatedAt  time.Time     `json:"created_at"`
	// Table is the physical table holding the version's items, as
	// AdminTables names it.
	Table string `json:"table"`
	// Expiry is how expired items leave the disk: ExpirySweep,
	// ExpiryNative or ExpiryDrop.
	Expiry ExpiryMode `json:"expiry"`
	// MaxItems is the most live items a list of the version holds (an add
	// beyond it trims the oldest); zero for no cap.
	MaxItems int `json:"max_items,omitempty"`
	// Rewrite is the version's last TTL rewrite, when one was asked for;
	// set only by ListFeature and CreateListFeatureWith.
	Rewrite *TTLRewrite `json:"rewrite,omitempty"`
}

// ListFeatureConfig is the body of PUT
// /v1/list-features/{entity_type}/{feature}/{version}.
type ListFeatureConfig struct {
	// TTL is how long after its timestamp an item lives; required.
	TTL time.Duration
	// Expiry is the version's expiry mode; empty takes the server's
	// backend default on create and keeps an existing version's mode.
	Expiry ExpiryMode
	// MaxItems, when set, is the version's cap on a list's live items,
	// 0..10000, zero for none; nil gives a new version no cap and keeps
	// an existing version's.
	MaxItems *int
	// Rewrite asks that the items an existing version already holds get
	// the TTL too (each its timestamp + TTL), by a background job whose
	// progress ListFeature's Rewrite shows. A server whose backend cannot
	// run it refuses with ErrInvalid and changes nothing.
	Rewrite bool
}

// MarshalJSON writes a ListFeature as the API does, durations as Go duration strings.
func (f ListFeature) MarshalJSON() ([]byte, error) {
	type plain ListFeature
	return json.Marshal(struct {
		plain
		TTL duration `json:"ttl"`
	}{plain(f), duration(f.TTL)})
}

// UnmarshalJSON reads a ListFeature as the API writes it.
func (f *ListFeature) UnmarshalJSON(b []byte) error {
	type plain ListFeature
	w := struct {
		*plain
		TTL duration `json:"ttl"`
	}{plain: (*plain)(f)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	f.TTL = time.Duration(w.TTL)
	return nil
}

// ListItem is one item of a list. Items with equal timestamps and
// different values are different items.
type ListItem struct {
	// Value is up to 64 KiB.
	Value []byte `json:"value"`
	// Timestamp is kept to the nanosecond, from 1970 to 2262.
	Timestamp time.Time `json:"timestamp"`
}

// AddListItemsResult is the answer of an add.
type AddListItemsResult struct {
	Written int `json:"written"`
	// SkippedExpired counts items already past the TTL, not written.
	SkippedExpired int `json:"skipped_expired"`
	// Trimmed counts items the feature's max_items removed: the list's
	// oldest items deleted by the add, and items of the add already beyond
	// the cap (counted in Written, never stored).
	Trimmed int `json:"trimmed,omitempty"`
}

// ListQuery selects the live items of a list, newest first.
type ListQuery struct {
	// MinTimestamp, when not zero, keeps items at or after it.
	MinTimestamp time.Time
	// Limit is the most items returned, 1..10000; zero is the server's
	// default, 100.
	Limit int
	// PageToken resumes after the last item of a previous page
	// (ListItemPage.NextPageToken); empty starts at the newest item.
	PageToken string
}

// ListItemPage is one page of a list, newest first.
type ListItemPage struct {
	Items []ListItem `json:"items"`
	// NextPageToken is set when the page is full: more items may follow.
	NextPageToken string `json:"next_page_token,omitempty"`
}

func listFeaturePath(id ListFeatureID) (string, error) {
	v := id.Version
	if v == "" {
		v = DefaultListVersion
	}
	return urlPath("/v1/list-features/", name{"entity type", id.EntityType}, "/", name{"feature", id.Feature}, "/", name{"version", v})
}

func listItemsPath(id ListFeatureID, entityID string) (string, error) {
	v := id.Version
	if v == "" {
		v = DefaultListVersion
	}
	return urlPath("/v1/lists/", name{"entity type", id.EntityType}, "/", name{"feature", id.Feature}, "/", name{"version", v},
		"/", name{"entity id", entityID}, "/items")
}

// CreateListFeature declares a list feature version whose items live ttl
// (PUT /v1/list-features/{entity_type}/{feature}/{version}). created is
// false when one already existed: with another TTL, its TTL changes for
// the items added from then on (items already added keep their expiry).
func (c *Client) CreateListFeature(ctx context.Context, id ListFeatureID, ttl time.Duration) (f ListFeature, created bool, err error) {
	p, err := listFeaturePath(id)
	if err != nil {
		return ListFeature{}, false, err
	}
	status, err := c.do(ctx, http.MethodPut, p, nil, map[string]duration{"ttl": duration(ttl)}, &f)
	return f, status == http.StatusCreated, err
}

// CreateListFeatureWith is CreateListFeature with an expiry mode and a
// cap. An existing version with the same TTL and another mode or cap gets
// the new one (created false); the items already written keep their
// mode, and a list longer than a lowered cap is trimmed by its next add.
func (c *Client) CreateListFeatureWith(ctx context.Context, id ListFeatureID, cfg ListFeatureConfig) (f ListFeature, created bool, err error) {
	p, err := listFeaturePath(id)
	if err != nil {
		return ListFeature{}, false, err
	}
	body := struct {
		TTL      duration   `json:"ttl"`
		Expiry   ExpiryMode `json:"expiry,omitempty"`
		MaxItems *int       `json:"max_items,omitempty"`
		Rewrite  bool       `json:"rewrite,omitempty"`
	}{duration(cfg.TTL), cfg.Expiry, cfg.MaxItems, cfg.Rewrite}
	status, err := c.do(ctx, http.MethodPut, p, nil, body, &f)
	return f, status == http.StatusCreated, err
}

// ListFeatures returns the list feature versions of an entity type, or
// every one when entityType is empty (GET /v1/list-features[/{entity_type}]),
// sorted by entity type, feature and version.
func (c *Client) ListFeatures(ctx context.Context, entityType string) ([]ListFeature, error) {
	p := "/v1/list-features"
	if entityType != "" {
		var err error
		if p, err = urlPath("/v1/list-features/", name{"entity type", entityType}); err != nil {
			return nil, err
		}
	}
	var out struct {
		Features []ListFeature `json:"features"`
	}
	_, err := c.do(ctx, http.MethodGet, p, nil, nil, &out)
	return out.Features, err
}

// ListFeature returns a list feature version
// (GET /v1/list-features/{entity_type}/{feature}/{version}).
func (c *Client) ListFeature(ctx context.Context, id ListFeatureID) (ListFeature, error) {
	p, err := listFeaturePath(id)
	if err != nil {
		return ListFeature{}, err
	}
	var f ListFeature
	_, err = c.do(ctx, http.MethodGet, p, nil, nil, &f)
	return f, err
}

// DeleteListFeature deletes a list feature version; every list of it is
// gone at once (DELETE /v1/list-features/{entity_type}/{feature}/{version}).
func (c *Client) DeleteListFeature(ctx context.Context, id ListFeatureID) error {
	p, err := listFeaturePath(id)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil, nil)
	return err
}

// DeleteAllListFeatureVersions deletes every version of a list feature
// with every list of each (DELETE /v1/list-features/{entity_type}/{feature}).
// A feature without any version is already deleted: that succeeds too.
func (c *Client) DeleteAllListFeatureVersions(ctx context.Context, entityType, feature string) error {
	p, err := urlPath("/v1/list-features/", name{"entity type", entityType}, "/", name{"feature", feature})
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil, nil)
	return err
}

// AddListItems adds up to 1000 items to the list of entityID
// (POST /v1/lists/{entity_type}/{feature}/{version}/{entity_id}/items).
// Items already expired are skipped and counted. A refused add writes
// nothing.
func (c *Client) AddListItems(ctx context.Context, id ListFeatureID, entityID string, items []ListItem) (AddListItemsResult, error) {
	p, err := listItemsPath(id, entityID)
	if err != nil {
		return AddListItemsResult{}, err
	}
	// The API requires a value on every item; a nil one is the empty
	// value, which JSON would otherwise send as null.
	type wireItem struct {
		Value     string `json:"value"`
		Timestamp string `json:"timestamp"`
	}
	body := struct {
		Items []wireItem `json:"items"`
	}{Items: make([]wireItem, len(items))}
	for i, it := range items {
		body.Items[i] = wireItem{Value: base64.StdEncoding.EncodeToString(it.Value), Timestamp: timefmt.Format(it.Timestamp)}
	}
	var res AddListItemsResult
	_, err = c.do(ctx, http.MethodPost, p, nil, body, &res)
	return res, err
}

// ListItems returns the live items of the list of entityID, newest first
// (GET /v1/lists/{entity_type}/{feature}/{version}/{entity_id}/items). A
// list never written is empty.
func (c *Client) ListItems(ctx context.Context, id ListFeatureID, entityID string, q ListQuery) ([]ListItem, error) {
	page, err := c.ListItemsPage(ctx, id, entityID, q)
	return page.Items, err
}

// ListItemsPage returns one page of the list of entityID, newest first,
// with the token of the next.
func (c *Client) ListItemsPage(ctx context.Context, id ListFeatureID, entityID string, q ListQuery) (ListItemPage, error) {
	p, err := listItemsPath(id, entityID)
	if err != nil {
		return ListItemPage{}, err
	}
	v := url.Values{}
	if !q.MinTimestamp.IsZero() {
		v.Set("min_timestamp", timefmt.Format(q.MinTimestamp))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.PageToken != "" {
		v.Set("page_token", q.PageToken)
	}
	var page ListItemPage
	_, err = c.do(ctx, http.MethodGet, p, v, nil, &page)
	return page, err
}

// AllListItems iterates over every item of the list of entityID, newest
// first, page by page.
func (c *Client) AllListItems(ctx context.Context, id ListFeatureID, entityID string, q ListQuery) iter.Seq2[ListItem, error] {
	return func(yield func(ListItem, error) bool) {
		for {
			page, err := c.ListItemsPage(ctx, id, entityID, q)
			if err != nil {
				yield(ListItem{}, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextPageToken == "" {
				return
			}
			q.PageToken = page.NextPageToken
		}
	}
}

// RemoveListItems removes every item with value from the list of entityID
// (DELETE .../{entity_id}/items?value=...).
func (c *Client) RemoveListItems(ctx context.Context, id ListFeatureID, entityID string, value []byte) error {
	p, err := listItemsPath(id, entityID)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, url.Values{"value": {base64.StdEncoding.EncodeToString(value)}}, nil, nil)
	return err
}

// ClearList removes the whole list of entityID (DELETE .../{entity_id}/items
// without a value).
func (c *Client) ClearList(ctx context.Context, id ListFeatureID, entityID string) error {
	p, err := listItemsPath(id, entityID)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil, nil)
	return err
}

// CountListItems returns the number of live items in the list of entityID
// (GET .../{entity_id}/items/count); zero for a list never written. The
// server reads the whole list to count it.
func (c *Client) CountListItems(ctx context.Context, id ListFeatureID, entityID string) (int, error) {
	p, err := listItemsPath(id, entityID)
	if err != nil {
		return 0, err
	}
	var out struct {
		Count int `json:"count"`
	}
	_, err = c.do(ctx, http.MethodGet, p+"/count", nil, nil, &out)
	return out.Count, err
}

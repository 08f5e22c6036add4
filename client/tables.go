package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
)

// TableConfig is the configuration of a shared table, the body of
// PUT /v1/tables/{table}.
type TableConfig struct {
	// DefaultTTL is the TTL of items put without their own; zero means
	// they never expire. Whole milliseconds.
	DefaultTTL time.Duration `json:"default_ttl"`
	// Expiry is the table's expiry mode, ExpirySweep or ExpiryNative;
	// empty takes the server's backend default on create and keeps an
	// existing table's mode.
	Expiry ExpiryMode `json:"expiry,omitempty"`
	// KeepDefaultTTL, for CreateTable, sends no default_ttl: an existing
	// table keeps its default TTL, and a new one gets none (its items
	// never expire). Never set on a Table read back.
	KeepDefaultTTL bool `json:"-"`
	// Rewrite, for CreateTable of an existing table, asks that the items
	// already put without a ttl of their own get the default TTL too, by
	// a background job whose progress Table's Rewrite shows. Never set on
	// a Table read back.
	Rewrite bool `json:"-"`
}

// MarshalJSON writes a TableConfig as the API does, durations as Go duration strings.
func (c TableConfig) MarshalJSON() ([]byte, error) {
	w := struct {
		DefaultTTL *duration  `json:"default_ttl,omitempty"`
		Expiry     ExpiryMode `json:"expiry,omitempty"`
		Rewrite    bool       `json:"rewrite,omitempty"`
	}{Expiry: c.Expiry, Rewrite: c.Rewrite}
	if !c.KeepDefaultTTL {
		d := duration(c.DefaultTTL)
		w.DefaultTTL = &d
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a TableConfig as the API writes it.
func (c *TableConfig) UnmarshalJSON(b []byte) error {
	var w struct {
		DefaultTTL duration   `json:"default_ttl"`
		Expiry     ExpiryMode `json:"expiry"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	c.DefaultTTL, c.Expiry = time.Duration(w.DefaultTTL), w.Expiry
	return nil
}

// Table is a shared (logical) table.
type Table struct {
	// Name matches ^[A-Za-z0-9_.-]{1,128}$.
	Name       string        `json:"name"`
	DefaultTTL time.Duration `json:"default_ttl"`
	CreatedAt  time.Time     `json:"created_at"`
	// Expiry is the table's expiry mode.
	Expiry ExpiryMode `json:"expiry"`
	// Rewrite is the table's last default-TTL rewrite, when one was asked
	// for; set only by Table and CreateTable.
	Rewrite *TTLRewrite `json:"rewrite,omitempty"`
}

// MarshalJSON writes a Table as the API does, durations as Go duration strings.
func (t Table) MarshalJSON() ([]byte, error) {
	type plain Table
	return json.Marshal(struct {
		plain
		DefaultTTL duration `json:"default_ttl"`
	}{plain(t), duration(t.DefaultTTL)})
}

// UnmarshalJSON reads a Table as the API writes it.
func (t *Table) UnmarshalJSON(b []byte) error {
	type plain Table
	w := struct {
		*plain
		DefaultTTL duration `json:"default_ttl"`
	}{plain: (*plain)(t)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t.DefaultTTL = time.Duration(w.DefaultTTL)
	return nil
}

// TableItem is an item of a shared table as stored.
type TableItem struct {
	// Key is 1 to 1000 bytes of UTF-8.
	Key string `json:"key"`
	// Timestamp is kept to the millisecond.
	Timestamp time.Time `json:"timestamp"`
	// Attributes is the item's JSON object, as compact JSON.
	Attributes json.RawMessage `json:"attributes"`
	// ExpiresAt is nil when the item never expires.
	ExpiresAt *time.Time `json:"expires_at"`
	// Version is opaque and changes with every write of the item:
	// PutTableItem.IfVersion, PatchTableItem.IfVersion and
	// DeleteTableItemIf compare it.
	Version string `json:"version"`
}

// PutTableItem is the body of PUT /v1/tables/{table}/items/{key}.
type PutTableItem struct {
	// Timestamp is required; years 0000-9999.
	Timestamp time.Time
	// Attributes is anything encoding/json encodes as a JSON object: a
	// map, a struct, a json.RawMessage. Nil stores {}. At most 256 KiB as
	// compact JSON.
	Attributes any
	// TTL, when not nil, is the item's own TTL from the write (0: never
	// expires); nil takes the table's default.
	TTL *time.Duration
	// IfAbsent makes the put create only (If-None-Match: *): a key that
	// holds a live item is ErrFailedPrecondition, and nothing is written.
	IfAbsent bool
	// IfVersion, when set, makes the put compare and set (If-Match): unless
	// the key holds a live item of this Version ("*": of any), it is
	// ErrFailedPrecondition, and nothing is written.
	IfVersion string
}

// MarshalJSON writes a PutTableItem as the API does, durations as Go duration strings.
func (p PutTableItem) MarshalJSON() ([]byte, error) {
	w := struct {
		Timestamp  string    `json:"timestamp"`
		Attributes any       `json:"attributes,omitempty"`
		TTL        *duration `json:"ttl,omitempty"`
	}{Timestamp: timefmt.Format(p.Timestamp), Attributes: p.Attributes}
	if p.TTL != nil {
		d := duration(*p.TTL)
		w.TTL = &d
	}
	return json.Marshal(w)
}

// TableItemsQuery selects the live items of a shared table, ordered by
// timestamp, then key bytewise.
type TableItemsQuery struct {
	// After, when not nil, keeps items whose timestamp is strictly after
	// it.
	After *time.Time
	// Limit is the most items in a page, 1..10000; zero is the server's
	// default, 100.
	Limit int
	// PageToken resumes after the last item of a previous page (its
	// NextPageToken), for the same After.
	PageToken string
}

// TableItemsPage is one page of a shared table's items.
type TableItemsPage struct {
	Items []TableItem `json:"items"`
	// NextPageToken is not empty when more items follow.
	NextPageToken string `json:"next_page_token,omitempty"`
}

func tablePath(table string, rest ...any) (string, error) {
	return urlPath(append([]any{"/v1/tables/", name{"table name", table}}, rest...)...)
}

func tableItemPath(table, key string) (string, error) {
	return tablePath(table, "/items/", name{"item key", key})
}

// CreateTable creates a shared table (PUT /v1/tables/{table}). created is
// false when one already existed: with another default TTL, it changes for
// the items put from then on (items already put keep their expiry).
func (c *Client) CreateTable(ctx context.Context, table string, cfg TableConfig) (t Table, created bool, err error) {
	p, err := tablePath(table)
	if err != nil {
		return Table{}, false, err
	}
	status, err := c.do(ctx, http.MethodPut, p, nil, cfg, &t)
	return t, status == http.StatusCreated, err
}

// Table returns a shared table (GET /v1/tables/{table}).
func (c *Client) Table(ctx context.Context, table string) (Table, error) {
	p, err := tablePath(table)
	if err != nil {
		return Table{}, err
	}
	var t Table
	_, err = c.do(ctx, http.MethodGet, p, nil, nil, &t)
	return t, err
}

// Tables returns every shared table, sorted by name (GET /v1/tables). With
// an auth file it needs the admin or *:* scope.
func (c *Client) Tables(ctx context.Context) ([]Table, error) {
	var out struct {
		Tables []Table `json:"tables"`
	}
	_, err := c.do(ctx, http.MethodGet, "/v1/tables", nil, nil, &out)
	return out.Tables, err
}

// DeleteTable deletes a shared table and every item in it
// (DELETE /v1/tables/{table}); deleting a missing table is no error.
func (c *Client) DeleteTable(ctx context.Context, table string) error {
	p, err := tablePath(table)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil, nil)
	return err
}

// PutTableItem writes an item, replacing any with the same key
// (PUT /v1/tables/{table}/items/{key}), and returns it as stored.
func (c *Client) PutTableItem(ctx context.Context, table, key string, item PutTableItem) (TableItem, error) {
	p, err := tableItemPath(table, key)
	if err != nil {
		return TableItem{}, err
	}
	var it TableItem
	_, err = c.do(withPreconditions(ctx, item.IfAbsent, item.IfVersion), http.MethodPut, p, nil, item, &it)
	return it, err
}

// TableItem returns a live item (GET /v1/tables/{table}/items/{key}); a
// missing or expired one is ErrNotFound.
func (c *Client) TableItem(ctx context.Context, table, key string) (TableItem, error) {
	p, err := tableItemPath(table, key)
	if err != nil {
		return TableItem{}, err
	}
	var it TableItem
	_, err = c.do(ctx, http.MethodGet, p, nil, nil, &it)
	return it, err
}

// DeleteTableItem deletes an item (DELETE /v1/tables/{table}/items/{key});
// deleting a missing item is no error.
func (c *Client) DeleteTableItem(ctx context.Context, table, key string) error {
	p, err := tableItemPath(table, key)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodDelete, p, nil, nil, nil)
	return err
}

// QueryTableItems returns one page of a shared table's live items
// (GET /v1/tables/{table}/items).
func (c *Client) QueryTableItems(ctx context.Context, table string, q TableItemsQuery) (TableItemsPage, error) {
	p, err := tablePath(table, "/items")
	if err != nil {
		return TableItemsPage{}, err
	}
	v := url.Values{}
	if q.After != nil {
		v.Set("after", timefmt.Format(*q.After))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.PageToken != "" {
		v.Set("page_token", q.PageToken)
	}
	var page TableItemsPage
	_, err = c.do(ctx, http.MethodGet, p, v, nil, &page)
	return page, err
}

// TableItems iterates over every live item q selects, page after page,
// q.Limit being the page size. It stops at the first error, which it
// yields with a zero TableItem.
func (c *Client) TableItems(ctx context.Context, table string, q TableItemsQuery) iter.Seq2[TableItem, error] {
	return func(yield func(TableItem, error) bool) {
		for {
			page, err := c.QueryTableItems(ctx, table, q)
			if err != nil {
				yield(TableItem{}, err)
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

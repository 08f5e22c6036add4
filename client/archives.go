package client

import (
	"context"
	"net/http"
	"time"
)

// Archive is one archived shard, from its manifest.
type Archive struct {
	Table    string    `json:"table"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Location string    `json:"location"`
	Object   string    `json:"object"`
	Rows     int64     `json:"rows"`
	Bytes    int64     `json:"bytes"`
	// MinTime and MaxTime are the range of the rows' timestamps; zero
	// for an empty shard.
	MinTime      time.Time `json:"min_time,omitzero"`
	MaxTime      time.Time `json:"max_time,omitzero"`
	Columns      []string  `json:"columns"`
	ObjectSHA256 string    `json:"object_sha256"`
	RowsSHA256   string    `json:"rows_sha256"`
	ArchivedAt   time.Time `json:"archived_at"`
	VerifiedAt   time.Time `json:"verified_at,omitzero"`
	// Restored is set while the shard is restored from it.
	Restored bool `json:"restored"`
}

// RestoredShard is a shard restored from its archive: queries of the
// index read it, and the shard manager keeps it, until it is released.
type RestoredShard struct {
	Table      string    `json:"table"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Location   string    `json:"location"`
	Rows       int64     `json:"rows"`
	RestoredAt time.Time `json:"restored_at"`
	Complete   bool      `json:"complete"`
}

// Archives is an index's archive listing.
type Archives struct {
	Archives []Archive       `json:"archives"`
	Restored []RestoredShard `json:"restored"`
}

// Archives lists an index's archived shards and those restored
// (GET /v1/indexes/{name}/archives).
func (c *Client) Archives(ctx context.Context, index string) (Archives, error) {
	p, err := indexPath(index, "/archives")
	if err != nil {
		return Archives{}, err
	}
	var out Archives
	_, err = c.do(ctx, http.MethodGet, p, nil, nil, &out)
	return out, err
}

// RestoreArchive brings an archived shard back as a read-only shard
// (POST /v1/indexes/{name}/archives/{shard}/restore).
func (c *Client) RestoreArchive(ctx context.Context, index, shard string) (RestoredShard, error) {
	p, err := indexPath(index, "/archives/", name{"shard", shard}, "/restore")
	if err != nil {
		return RestoredShard{}, err
	}
	var out RestoredShard
	_, err = c.do(ctx, http.MethodPost, p, nil, nil, &out)
	return out, err
}

// ReleaseArchive drops a restored shard
// (POST /v1/indexes/{name}/archives/{shard}/release).
func (c *Client) ReleaseArchive(ctx context.Context, index, shard string) error {
	p, err := indexPath(index, "/archives/", name{"shard", shard}, "/release")
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, p, nil, nil, nil)
	return err
}

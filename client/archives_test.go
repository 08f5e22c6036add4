package client_test

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

// TestArchives: an index created with an archive reports it; its archive
// listing starts empty; a shard without an archive is neither restored
// nor released; an index without an archive has no listing.
func TestArchives(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, rootToken)
	ctx := context.Background()
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(t.TempDir())}).String()
	idx, _, err := c.CreateIndex(ctx, "events", client.IndexConfig{TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 24 * time.Hour,
		Archive: &client.ArchiveConfig{To: loc}})
	if err != nil {
		t.Fatal(err)
	}
	if idx.Archive == nil || idx.Archive.To != loc {
		t.Fatalf("archive %+v", idx.Archive)
	}
	as, err := c.Archives(ctx, "events")
	if err != nil || len(as.Archives) != 0 || as.Restored == nil {
		t.Fatalf("archives %+v, %v", as, err)
	}
	shard := idx.Shards[0].Table
	if _, err := c.RestoreArchive(ctx, "events", shard); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("restore of a shard never archived: %v", err)
	}
	if err := c.ReleaseArchive(ctx, "events", shard); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("release of a shard not restored: %v", err)
	}
	if _, _, err := c.CreateIndex(ctx, "plain", client.IndexConfig{TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Archives(ctx, "plain"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("archives of an index without one: %v", err)
	}
}

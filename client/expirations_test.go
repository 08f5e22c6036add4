package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

// TestExpirations follows the log of expirations through the client: a
// swept list item appears once removed, named by its feature and key; a
// token scoped to an index does not see it.
func TestExpirations(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, rootToken)
	ctx := t.Context()
	id := client.ListFeatureID{EntityType: "user", Feature: "seen"}
	if _, _, err := c.CreateListFeatureWith(ctx, id, client.ListFeatureConfig{TTL: time.Second, Expiry: client.ExpirySweep}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddListItems(ctx, id, "u1", []client.ListItem{{Value: []byte("v"), Timestamp: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []client.Expiration
	stop := errors.New("stop")
	next, err := c.WatchExpirations(wctx, "", 5*time.Second, func(x client.Expiration) error {
		got = append(got, x)
		return stop
	})
	if !errors.Is(err, stop) || len(got) != 1 {
		t.Fatalf("watch: %v, %+v", err, got)
	}
	x := got[0]
	if x.Type != "row" || x.Kind != "list" || x.Name != "user" || x.Feature != "seen" || x.Key[0] != "u1" || x.RemovedAt.Before(x.ExpiresAt) {
		t.Fatalf("expiration %+v", x)
	}
	if next != "" {
		t.Fatalf("a watch stopped by its callback resumes at %q, want before the entry it refused", next)
	}
	p, err := c.Expirations(ctx, client.ExpirationsQuery{After: x.Cursor, Limit: 10})
	if err != nil || len(p.Expirations) != 0 || p.Next == "" {
		t.Fatalf("after the entry: %+v, %v", p, err)
	}
	scoped, err := e.client(t, eventsToken).Expirations(ctx, client.ExpirationsQuery{})
	if err != nil || len(scoped.Expirations) != 0 {
		t.Fatalf("a token of index events sees %+v, %v", scoped, err)
	}
}

package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

// TestExpiryModes checks the expiry field through the client on a server
// with the embedded backend: sweep is its default and native is refused;
// a list feature takes drop and changes mode online (200, not 201); a
// shared table refuses drop.
func TestExpiryModes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, rootToken)
	id := client.ListFeatureID{EntityType: "user", Feature: "seen"}

	f, created, err := c.CreateListFeatureWith(ctx, id, client.ListFeatureConfig{TTL: time.Hour})
	if err != nil || !created || f.Expiry != client.ExpirySweep {
		t.Fatalf("create with the default mode: %+v created=%v %v", f, created, err)
	}
	f, created, err = c.CreateListFeatureWith(ctx, id, client.ListFeatureConfig{TTL: time.Hour, Expiry: client.ExpiryDrop})
	if err != nil || created || f.Expiry != client.ExpiryDrop {
		t.Fatalf("change to drop: %+v created=%v %v", f, created, err)
	}
	if got, err := c.ListFeature(ctx, id); err != nil || got.Expiry != client.ExpiryDrop {
		t.Fatalf("feature after the change: %+v %v", got, err)
	}
	if _, _, err := c.CreateListFeatureWith(ctx, id, client.ListFeatureConfig{TTL: time.Hour, Expiry: client.ExpiryNative}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("native on the embedded backend: %v, want invalid_argument", err)
	}
	if _, _, err := c.CreateListFeatureWith(ctx, id, client.ListFeatureConfig{TTL: time.Hour, Expiry: "soon"}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("unknown mode: %v, want invalid_argument", err)
	}

	tbl, created, err := c.CreateTable(ctx, "orders", client.TableConfig{DefaultTTL: time.Minute})
	if err != nil || !created || tbl.Expiry != client.ExpirySweep {
		t.Fatalf("create table: %+v created=%v %v", tbl, created, err)
	}
	if _, _, err := c.CreateTable(ctx, "orders", client.TableConfig{DefaultTTL: time.Minute, Expiry: client.ExpiryDrop}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("drop for a shared table: %v, want invalid_argument", err)
	}
	if got, err := c.Table(ctx, "orders"); err != nil || got.Expiry != client.ExpirySweep {
		t.Fatalf("table after the refused change: %+v %v", got, err)
	}
}

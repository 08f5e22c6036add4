package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

func TestUsage(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, rootToken)
	ctx := context.Background()
	if _, _, err := c.CreateTable(ctx, "tenant_a", client.TableConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutTableItem(ctx, "tenant_a", "k", client.PutTableItem{Timestamp: time.Now(), Attributes: map[string]int{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	u, err := c.Usage(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if u.Total("dynamodb", "write", "shared_table") < 1 || u.Total("keyspaces", "write", "catalog") < 1 || len(u.Storage) == 0 {
		t.Errorf("usage after a shared-table put: %+v", u)
	}
	u, live, err := c.UsageCost(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if live == nil || len(live.Projections) != 2 || live.Projections[0].Writes <= 0 || !live.StorageKnown {
		t.Errorf("usage with cost after a shared-table put: %+v", live)
	} else if u.Total("dynamodb", "write", "shared_table") < 1 {
		t.Errorf("usage with cost: %+v", u)
	}
	if _, err := e.client(t, eventsToken).Usage(ctx, false); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("usage without the admin scope: %v", err)
	}
}

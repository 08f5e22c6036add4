package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

// TestTablesConditional: create-only and versioned puts, patches and
// deletes through the client, a failed precondition being
// ErrFailedPrecondition, and batch reads.
func TestTablesConditional(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, rootToken)
	if _, _, err := c.CreateTable(ctx, "cas", client.TableConfig{}); err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Truncate(time.Millisecond)
	v1, err := c.PutTableItem(ctx, "cas", "k", client.PutTableItem{Timestamp: base, Attributes: map[string]any{"a": 1, "b": 2}, IfAbsent: true})
	if err != nil || v1.Version == "" {
		t.Fatalf("create-only put: %+v %v", v1, err)
	}
	if _, err := c.PutTableItem(ctx, "cas", "k", client.PutTableItem{Timestamp: base, IfAbsent: true}); !errors.Is(err, client.ErrFailedPrecondition) {
		t.Fatalf("create-only put of an existing key: %v", err)
	}
	v2, err := c.PatchTableItem(ctx, "cas", "k", client.PatchTableItem{Attributes: map[string]any{"b": nil, "c": 3}, IfVersion: v1.Version})
	if err != nil || string(v2.Attributes) != `{"a":1,"c":3}` || v2.Version == v1.Version {
		t.Fatalf("patch: %+v %v", v2, err)
	}
	if _, err := c.PatchTableItem(ctx, "cas", "k", client.PatchTableItem{Attributes: map[string]any{"d": 4}, IfVersion: v1.Version}); !errors.Is(err, client.ErrFailedPrecondition) {
		t.Fatalf("patch at a stale version: %v", err)
	}
	if err := c.DeleteTableItemIf(ctx, "cas", "k", v1.Version); !errors.Is(err, client.ErrFailedPrecondition) {
		t.Fatalf("delete at a stale version: %v", err)
	}
	if got, err := c.TableItem(ctx, "cas", "k"); err != nil || got.Version != v2.Version {
		t.Fatalf("after refused writes: %+v %v", got, err)
	}

	// Writers that read one version and write at it at once: one wins.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range errs {
		wg.Go(func() {
			_, errs[w] = c.PutTableItem(ctx, "cas", "k", client.PutTableItem{Timestamp: base, Attributes: json.RawMessage(fmt.Sprintf(`{"w":%d}`, w)), IfVersion: v2.Version})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, client.ErrFailedPrecondition):
			t.Fatalf("racing writer: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racing writers won, want 1", won)
	}

	batch, err := c.BatchGetTableItems(ctx, "cas", []string{"none", "k"})
	if err != nil || len(batch.Items) != 1 || batch.Items[0].Key != "k" || len(batch.Missing) != 1 || batch.Missing[0] != "none" {
		t.Fatalf("batch get: %+v %v", batch, err)
	}
	if _, err := c.BatchGetTableItems(ctx, "cas", make([]string, client.MaxBatchGetKeys+1)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("batch get of too many keys: %v", err)
	}
	cur, err := c.TableItem(ctx, "cas", "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTableItemIf(ctx, "cas", "k", cur.Version); err != nil {
		t.Fatalf("delete at the current version: %v", err)
	}
	if _, err := c.TableItem(ctx, "cas", "k"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

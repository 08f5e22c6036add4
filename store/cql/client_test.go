package cql

import (
	"context"
	"errors"
	"testing"

	"github.com/ebb-data/ebb/store"
)

// TestClient runs statements of its own on a dialled Client and on a
// Store's: results, errors mapped onto the store sentinels, and Close.
func TestClient(t *testing.T) {
	st := openTest(t, nil, nil)
	ctx := t.Context()
	o := DefaultOptions()
	o.Hosts = testHosts(t)
	dialled, err := Dial(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer dialled.Close()
	if _, err := Dial(ctx, Options{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Dial without hosts: %v, want store.ErrInvalid", err)
	}
	for name, c := range map[string]*Client{"dialled": dialled, "store's": st.Client()} {
		t.Run(name, func(t *testing.T) {
			if c.Provider() != st.Provider() {
				t.Fatalf("provider %v, the Store's %v", c.Provider(), st.Provider())
			}
			var ks string
			err := c.Do(ctx, "read", true, func(ctx context.Context) error {
				return c.Session().Query(`SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`, st.Keyspace()).ScanContext(ctx, &ks)
			})
			if err != nil || ks != st.Keyspace() {
				t.Fatalf("read %q, %v", ks, err)
			}
			err = c.Do(ctx, "read none", true, func(ctx context.Context) error {
				return c.Session().Query(`SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = 'none_such'`).ScanContext(ctx, &ks)
			})
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("no row: %v, want store.ErrNotFound", err)
			}
			err = c.Do(ctx, "read a missing table", true, func(ctx context.Context) error {
				return c.Session().Query(`SELECT * FROM "` + st.Keyspace() + `"."none_such"`).ExecContext(ctx)
			})
			if !errors.Is(err, store.ErrTableNotFound) {
				t.Fatalf("missing table: %v, want store.ErrTableNotFound", err)
			}
			_ = c.Close()
			_ = c.Close()
			if err := c.Do(ctx, "after close", true, func(context.Context) error { return nil }); !errors.Is(err, store.ErrClosed) {
				t.Fatalf("after Close: %v, want store.ErrClosed", err)
			}
		})
	}
	// Closing the Store's Client leaves the Store working.
	if _, err := st.Tables(ctx, ""); err != nil {
		t.Fatalf("the Store after its Client closed: %v", err)
	}
}

package lists_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/storetest"
)

// modeEnv is a Service on the expiry decorator over a backend, with the
// index writes counted.
type modeEnv struct {
	ctx     context.Context
	clock   *storetest.Clock
	raw     store.Store
	counter *storetest.UpsertCounter
	wrapped *expiry.Store
	svc     *lists.Service
}

func newModeEnv(t *testing.T, open testbackend.Factory) *modeEnv {
	ctx := t.Context()
	c := storetest.NewClock(start)
	raw := open(t, c.Now)
	counter := storetest.NewUpsertCounter(raw, expiry.IndexTable)
	counter.Ignore = expiry.IsDueMarker
	wrapped, err := expiry.Wrap(ctx, counter, expiry.Options{Now: c.Now, Window: time.Minute, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lists.New(ctx, wrapped, lists.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &modeEnv{ctx: ctx, clock: c, raw: raw, counter: counter, wrapped: wrapped, svc: svc}
}

// present counts the rows physically stored in one list of table, expired
// or not: it reads with the clock moved back before any expiry, then
// restores it.
func (e *modeEnv) present(t *testing.T, table, entity string) int {
	t.Helper()
	saved := e.clock.Now()
	e.clock.Set(time.Unix(1, 0))
	defer e.clock.Set(saved)
	n := 0
	q := store.Query{Partition: []any{entity}, Limit: store.MaxLimit}
	for {
		page, err := kit.Query(e.ctx, e.raw, table, q)
		if err != nil {
			t.Fatalf("query %s: %v", table, err)
		}
		n += len(page.Rows)
		if page.NextPageToken == nil {
			return n
		}
		q.PageToken = page.NextPageToken
	}
}

// add writes n items that expire 10 minutes after start and returns how
// many index entries the write made.
func (e *modeEnv) add(t *testing.T, id lists.FeatureID, prefix string, n int) int64 {
	t.Helper()
	before := e.counter.Upserts()
	var items []lists.Item
	for i := range n {
		items = append(items, item(fmt.Sprint(prefix, i), start.Add(-50*time.Minute)))
	}
	if _, err := e.svc.Add(e.ctx, id, "alice", items); err != nil {
		t.Fatal(err)
	}
	return e.counter.Upserts() - before
}

// TestExpiryModes checks each expiry mode on every backend selected: a
// sweep feature's items get index entries and are deleted by the sweeper;
// a native one's get none (on a backend without native TTL the mode is
// refused); a drop one's get none, vanish from reads at their expiry and
// leave the disk only with the version's table.
func TestExpiryModes(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		e := newModeEnv(t, open)
		caps := e.raw.Capabilities()
		features := map[store.ExpiryMode]lists.Feature{}
		for _, mode := range []store.ExpiryMode{store.ExpirySweep, store.ExpiryNative, store.ExpiryDrop} {
			id := lists.FeatureID{EntityType: "user", Feature: "seen_" + mode.String()}
			f, created, err := e.svc.CreateFeatureWith(e.ctx, id, lists.FeatureConfig{TTL: time.Hour, Expiry: mode})
			if mode == store.ExpiryNative && !caps.NativeTTL {
				if !errors.Is(err, store.ErrNativeTTLUnsupported) || !errors.Is(err, store.ErrInvalid) {
					t.Fatalf("native on %s without native TTL: %v, want ErrNativeTTLUnsupported", caps.Backend, err)
				}
				continue
			}
			if err != nil || !created || f.Expiry != mode {
				t.Fatalf("create %s: %+v created=%v %v", mode, f, created, err)
			}
			if got, err := e.svc.Feature(e.ctx, id); err != nil || got.Expiry != mode {
				t.Fatalf("feature %s read back: %+v %v", mode, got, err)
			}
			features[mode] = f
			entries := e.add(t, id, "v", 10)
			want := int64(0)
			if mode == store.ExpirySweep {
				want = 10
			}
			if entries != want {
				t.Fatalf("%s: %d index entries for 10 items, want %d", mode, entries, want)
			}
		}

		e.clock.Advance(15 * time.Minute)
		if _, err := e.wrapped.Sweeper().SweepOnce(e.ctx, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		for mode, f := range features {
			got, err := e.svc.Get(e.ctx, f.FeatureID, "alice", time.Time{}, 100)
			if err != nil || len(got) != 0 {
				t.Fatalf("%s: %d items read after their expiry, %v; want none", mode, len(got), err)
			}
			want := 10 // left to the backend's TTL or to the drop
			if mode == store.ExpirySweep {
				want = 0
			}
			if n := e.present(t, f.Table, "alice"); n != want {
				t.Fatalf("%s: %d rows on disk after the sweep, want %d", mode, n, want)
			}
		}

		drop := features[store.ExpiryDrop]
		if err := e.svc.DeleteFeatureVersion(e.ctx, drop.FeatureID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.raw.Spec(e.ctx, drop.Table); !errors.Is(err, store.ErrTableNotFound) {
			t.Fatalf("drop feature's table after the version's delete: %v, want ErrTableNotFound", err)
		}
	})
}

// TestExpiryModeChange checks that a feature's mode changes online: the
// same TTL with another mode answers the feature with its new mode (not
// created), items written from then on follow it, and items written before
// keep theirs.
func TestExpiryModeChange(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		e := newModeEnv(t, open)
		f, _, err := e.svc.CreateFeatureWith(e.ctx, feat, lists.FeatureConfig{TTL: time.Hour, Expiry: store.ExpirySweep})
		if err != nil {
			t.Fatal(err)
		}
		if n := e.add(t, feat, "before", 4); n != 4 {
			t.Fatalf("%d index entries under sweep, want 4", n)
		}
		// No mode keeps the current one.
		if got, created, err := e.svc.CreateFeatureWith(e.ctx, feat, lists.FeatureConfig{TTL: time.Hour}); err != nil || created || got.Expiry != store.ExpirySweep {
			t.Fatalf("create again without a mode: %+v created=%v %v", got, created, err)
		}
		got, created, err := e.svc.CreateFeatureWith(e.ctx, feat, lists.FeatureConfig{TTL: time.Hour, Expiry: store.ExpiryDrop})
		if err != nil || created || got.Expiry != store.ExpiryDrop || got.Table != f.Table {
			t.Fatalf("change to drop: %+v created=%v %v", got, created, err)
		}
		if got, err := e.svc.Feature(e.ctx, feat); err != nil || got.Expiry != store.ExpiryDrop {
			t.Fatalf("feature after the change: %+v %v", got, err)
		}
		if n := e.add(t, feat, "after", 4); n != 0 {
			t.Fatalf("%d index entries under drop, want 0", n)
		}
		// Another TTL and another mode change together, for the items
		// added from then on.
		if got, created, err := e.svc.CreateFeatureWith(e.ctx, feat, lists.FeatureConfig{TTL: 2 * time.Hour, Expiry: store.ExpirySweep}); err != nil || created ||
			got.TTL != 2*time.Hour || got.Expiry != store.ExpirySweep || got.Table != f.Table {
			t.Fatalf("another TTL and mode: %+v created=%v %v", got, created, err)
		}
		e.clock.Advance(15 * time.Minute)
		if _, err := e.wrapped.Sweeper().SweepOnce(e.ctx, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		// The items written under sweep were swept; those written under
		// drop stay until the table goes.
		if n := e.present(t, f.Table, "alice"); n != 4 {
			t.Fatalf("%d rows on disk after the sweep, want the 4 written under drop", n)
		}
	})
}

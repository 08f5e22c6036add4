package multitable

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// newSweptEnv is an env whose Registry writes through the expiry
// decorator over st, as `ebb serve` does; raw is the backend beneath,
// which the env reads directly. opts.Now is the clock's.
func newSweptEnv(t *testing.T, clock *storetest.Clock, raw, st store.Store, opts Options) (*env, *expiry.Store) {
	t.Helper()
	wrapped, err := expiry.Wrap(t.Context(), st, expiry.Options{Now: clock.Now, Window: time.Minute, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	opts.Now = clock.Now
	reg, err := New(t.Context(), wrapped, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: t.Context(), clock: clock, raw: raw, reg: reg}, wrapped
}

// TestExpiryModes checks each expiry mode of a shared table on every
// backend selected: a sweep table's items (and their listing rows) get
// index entries and are swept; a native one's get none, vanish from reads
// at their expiry and stay on disk for the backend's TTL (refused without
// native TTL); drop is refused, since a shared table is never dropped.
func TestExpiryModes(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := t.Context()
		clock := storetest.NewClock(t0)
		raw := open(t, clock.Now)
		counter := storetest.NewUpsertCounter(raw, expiry.IndexTable)
		counter.Ignore = expiry.IsDueMarker
		e, wrapped := newSweptEnv(t, clock, raw, counter, Options{})
		reg := e.reg
		caps := raw.Capabilities()
		// Five items expiring together make five item rows, five entries
		// and one bucket row: eleven rows with an expiry.
		const items, rowsPerTable = 5, 11
		var tables []store.ExpiryMode
		for _, mode := range []store.ExpiryMode{store.ExpirySweep, store.ExpiryNative, store.ExpiryDrop} {
			name := "t_" + mode.String()
			tbl, created, err := reg.CreateTable(ctx, name, Config{DefaultTTL: 90 * time.Second, Expiry: mode})
			if mode == store.ExpiryDrop {
				if !errors.Is(err, ErrDropMode) || !errors.Is(err, store.ErrInvalid) {
					t.Fatalf("drop: %v, want ErrDropMode", err)
				}
				continue
			}
			if mode == store.ExpiryNative && !caps.NativeTTL {
				if !errors.Is(err, store.ErrNativeTTLUnsupported) {
					t.Fatalf("native on %s without native TTL: %v, want ErrNativeTTLUnsupported", caps.Backend, err)
				}
				continue
			}
			if err != nil || !created || tbl.Expiry != mode {
				t.Fatalf("create %s: %+v created=%v %v", name, tbl, created, err)
			}
			if got, err := reg.Table(ctx, name); err != nil || got.Expiry != mode {
				t.Fatalf("table %s read back: %+v %v", name, got, err)
			}
			tables = append(tables, mode)
			before := counter.Upserts()
			for i := range items {
				e.put(name, fmt.Sprint("k", i), at(0), attrsOf(i), nil)
			}
			n := counter.Upserts() - before
			if mode == store.ExpirySweep && n < rowsPerTable {
				t.Fatalf("sweep: %d index entries for %d rows with an expiry, want at least that many", n, rowsPerTable)
			}
			if mode != store.ExpirySweep && n != 0 {
				t.Fatalf("%s: %d index entries, want none", mode, n)
			}
		}
		total := int64(len(tables) * rowsPerTable)
		if n := e.rawRows(); n != total {
			t.Fatalf("%d rows before the sweep, want %d", n, total)
		}
		// Past the bucket rows' granule (the hour the expiries fall in) too.
		clock.Set(at(2 * time.Hour))
		if _, err := wrapped.Sweeper().SweepOnce(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
		for _, mode := range tables {
			if it, ok := e.get("t_"+mode.String(), "k0"); ok {
				t.Fatalf("%s: expired item read: %+v", mode, it)
			}
			if got := e.listAll("t_"+mode.String(), nil, 100); len(got) != 0 {
				t.Fatalf("%s: %d expired items listed", mode, len(got))
			}
		}
		// Only the sweep table's rows left the disk.
		if n := e.rawRows(); n != total-rowsPerTable {
			t.Fatalf("%d rows after the sweep, want %d", n, total-rowsPerTable)
		}
	})
}

// TestExpiryModeChange checks that a table's mode changes online and that
// a create naming no mode keeps it.
func TestExpiryModeChange(t *testing.T) {
	e := newEnv(t, backend{open: testbackend.Pebble})
	if tbl, created, err := e.reg.CreateTable(e.ctx, "t", Config{DefaultTTL: time.Minute}); err != nil || !created ||
		tbl.Expiry != store.DefaultExpiryMode(e.raw.Capabilities()) {
		t.Fatalf("create with the default mode: %+v created=%v %v", tbl, created, err)
	}
	// The embedded backend offers sweep alone: native needs native TTL,
	// and drop a table of its own.
	if _, _, err := e.reg.CreateTable(e.ctx, "t", Config{DefaultTTL: time.Minute, Expiry: store.ExpiryDrop}); !errors.Is(err, ErrDropMode) {
		t.Fatalf("change to drop: %v, want ErrDropMode", err)
	}
	// Another default TTL changes it in place, the mode staying.
	if tbl, created, err := e.reg.CreateTable(e.ctx, "t", Config{DefaultTTL: time.Hour, Expiry: store.ExpirySweep}); err != nil || created ||
		tbl.DefaultTTL != time.Hour || tbl.Expiry != store.ExpirySweep {
		t.Fatalf("another default TTL: %+v created=%v %v, want it changed", tbl, created, err)
	}
	if _, _, err := e.reg.CreateTable(e.ctx, "n", Config{Expiry: store.ExpiryNative}); !errors.Is(err, store.ErrNativeTTLUnsupported) {
		t.Fatalf("native on the embedded backend: %v, want ErrNativeTTLUnsupported", err)
	}
}

// TestExpiryModeSwitch changes a table's mode through its record, as a
// PUT with another expiry does on a backend with native TTL, and checks
// that the rows written next carry it while those written before keep
// their index entries.
func TestExpiryModeSwitch(t *testing.T) {
	ctx := t.Context()
	clock := storetest.NewClock(t0)
	raw := testbackend.Pebble(t, clock.Now)
	counter := storetest.NewUpsertCounter(nativeTTL{raw}, expiry.IndexTable)
	counter.Ignore = expiry.IsDueMarker
	e, wrapped := newSweptEnv(t, clock, raw, counter, Options{CacheTTL: -1})
	reg := e.reg
	if _, _, err := reg.CreateTable(ctx, "t", Config{DefaultTTL: time.Minute, Expiry: store.ExpirySweep}); err != nil {
		t.Fatal(err)
	}
	e.put("t", "a", at(0), `{}`, nil)
	swept := counter.Upserts()
	if swept == 0 {
		t.Fatal("no index entries under sweep")
	}
	tbl, created, err := reg.CreateTable(ctx, "t", Config{DefaultTTL: time.Minute, Expiry: store.ExpiryNative})
	if err != nil || created || tbl.Expiry != store.ExpiryNative {
		t.Fatalf("change to native: %+v created=%v %v", tbl, created, err)
	}
	if tbl, created, err := reg.CreateTable(ctx, "t", Config{DefaultTTL: time.Minute}); err != nil || created || tbl.Expiry != store.ExpiryNative {
		t.Fatalf("create again without a mode: %+v created=%v %v", tbl, created, err)
	}
	e.put("t", "b", at(0), `{}`, nil)
	if n := counter.Upserts() - swept; n != 0 {
		t.Fatalf("%d index entries under native, want none", n)
	}
	clock.Set(at(2 * time.Hour))
	if _, err := wrapped.Sweeper().SweepOnce(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	// a's item, entry and bucket row were swept (b's put found that
	// bucket row written already and wrote none); b's item and entry,
	// written under native, are left to the backend's TTL.
	if n := e.rawRows(); n != 2 {
		t.Fatalf("%d rows after the sweep, want b's 2", n)
	}
}

// nativeTTL is a Store reporting native TTL, so that the embedded backend
// accepts the native mode in a test that only counts index entries.
type nativeTTL struct{ store.Store }

func (n nativeTTL) Capabilities() store.Capabilities {
	c := n.Store.Capabilities()
	c.NativeTTL = true
	return c
}

package expiry

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// TestModesOutsideTheIndex checks, on every backend selected, that only
// swept writes (the zero mode and ExpirySweep) get index entries: upserts
// and cell deletes in the native and drop modes write none, so the sweeper
// never deletes their rows, which reads still hide once expired.
func TestModesOutsideTheIndex(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		e := newEnv(t, open, Options{Window: time.Second, Shards: 2})
		modes := []store.ExpiryMode{store.ExpiryDefault, store.ExpirySweep, store.ExpiryNative, store.ExpiryDrop}
		for i, mode := range modes {
			before := e.cnt.tableMutations(IndexTable)
			m := item("p", int64(i), at(10*time.Second))
			m.Expiry = mode
			del := store.Mutation{Kind: store.DeleteCells, Partition: []any{"p"}, Clustering: []any{int64(100 + i)},
				Cells: []store.Cell{{Column: "w"}}, Expiry: mode}
			e.write(itemsSpec.Name, m, del)
			n := e.cnt.tableMutations(IndexTable) - before
			want := int64(0)
			if mode.Swept() {
				want = 2 // the upsert's entry and the cell delete's
			}
			if n != want {
				t.Fatalf("%s: %d index writes, want %d", mode, n, want)
			}
		}
		e.clock.Set(at(time.Minute))
		e.sweep()
		if got := e.countPresent(itemsSpec.Name, "p"); got != 2 {
			t.Fatalf("%d rows on disk after the sweep, want the native and drop ones", got)
		}
		for i := range modes {
			p, ck := key("p", int64(i))
			if _, err := e.st.Get(e.ctx, itemsSpec.Name, p, ck); !isErr(err, store.ErrNotFound) {
				t.Fatalf("row %d read after its expiry: %v", i, err)
			}
		}
	})
}

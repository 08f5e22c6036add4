package cql

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// TestDropModeTTL checks that an upsert in the drop expiry mode is written
// with TTL 0 (no native TTL, overriding the table's default_time_to_live),
// data and index entries alike, while the other modes keep their TTL.
func TestDropModeTTL(t *testing.T) {
	spec := store.TableSpec{
		Name:         "t",
		PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
		Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
		Values:       []store.Column{{Name: "v", Type: store.TypeText}, {Name: "w", Type: store.TypeText}},
		DefaultTTL:   time.Hour,
		Indexes:      []store.IndexSpec{{Name: "by_v", Column: "v"}},
	}
	sc := newSchema("ks", spec)
	now := goldenNow
	for _, mode := range []store.ExpiryMode{store.ExpiryDefault, store.ExpirySweep, store.ExpiryNative, store.ExpiryDrop} {
		m := store.Mutation{Partition: []any{"p"}, Clustering: []any{int64(1)}, ExpiresAt: now.Add(time.Hour), Expiry: mode,
			Cells: []store.Cell{{Column: "v", Value: "x"}, {Column: "w", Value: "y", ExpiresAt: now.Add(2 * time.Hour)}}}
		rs, err := kit.ResolveBatch(&spec, []store.Mutation{m}, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		w := writeParams{ts: goldenTS, now: now.UnixMilli(), margin: DefaultTTLMargin.Milliseconds(), cap: ttlCap(now)}
		stmts := upsertStmts(sc, &rs[0], w, nil)
		if len(stmts) != 3 { // two expiry groups and one index entry
			t.Fatalf("%s: %d statements, want 3", mode, len(stmts))
		}
		for _, s := range stmts {
			ttl, ok := s.args[1].(int64)
			if !ok {
				t.Fatalf("%s: %q: TTL argument %v", mode, s.cql, s.args[1])
			}
			if mode == store.ExpiryDrop && ttl != 0 {
				t.Errorf("%s: %q: TTL %d, want 0", mode, s.cql, ttl)
			}
			if mode != store.ExpiryDrop && ttl < 3600 {
				t.Errorf("%s: %q: TTL %d, want at least the hour to expiry", mode, s.cql, ttl)
			}
		}
	}
}

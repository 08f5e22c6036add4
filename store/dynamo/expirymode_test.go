package dynamo

import (
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

// TestDropModeTTL checks that an upsert in the drop expiry mode leaves no
// native TTL attribute, on a whole-item put, on a put folded with a cell
// delete and on a partial update (which removes the attribute), while the
// other modes keep it.
func TestDropModeTTL(t *testing.T) {
	exp := unitNow.Add(time.Hour)
	for _, mode := range []store.ExpiryMode{store.ExpiryDefault, store.ExpirySweep, store.ExpiryNative, store.ExpiryDrop} {
		put := full(1, "x", exp)
		put.Expiry = mode
		upd := partial(2, "y", exp)
		upd.Expiry = mode
		phases := foldBatch(t, []store.Mutation{put, kind(store.DeleteCells, 1, "b"), upd})
		if got := describe(phases); got != "put@1 upd@2" {
			t.Fatalf("%s: phases %s", mode, got)
		}
		_, hasTTL := phases[0][0].item[attrTTL]
		if hasTTL == (mode == store.ExpiryDrop) {
			t.Errorf("%s: put has a ttl attribute: %v", mode, hasTTL)
		}
		// An update that must lose the attribute is one whose parts may
		// never expire.
		if removes := phases[0][1].neverExpires; removes != (mode == store.ExpiryDrop) {
			t.Errorf("%s: update removes the ttl attribute: %v", mode, removes)
		}
	}
}

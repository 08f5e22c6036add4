package meter_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
)

// noGuard hides the embedded backend's guarded batches, so that shared
// tables write as they do on DynamoDB and CQL: entry, then item.
type noGuard struct{ store.Store }

func (n noGuard) Capabilities() store.Capabilities {
	c := n.Store.Capabilities()
	c.GuardedBatch = false
	return c
}

// TestGuardedPutsBillAlike runs the same shared-table puts with the
// entry and the item in one guarded batch (the embedded backend) and in
// two writes (as on DynamoDB and CQL): the units billed must be the same,
// so that an estimate made on the embedded backend holds on the provider.
// Only the count of store calls differs.
func TestGuardedPutsBillAlike(t *testing.T) {
	usage := func(wrap func(store.Store) store.Store) (units map[string]map[string]int64, requests int64) {
		m, err := meter.Wrap(wrap(testbackend.Pebble(t, nil)), meter.Options{Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := multitable.New(t.Context(), m, multitable.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			ttl  time.Duration
		}{{"hourly", time.Hour}, {"forever", 0}} {
			if _, _, err := reg.CreateTable(t.Context(), c.name, multitable.Config{DefaultTTL: c.ttl}); err != nil {
				t.Fatal(err)
			}
			base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			for i := range 40 {
				// New keys, then the same keys again: at the same time
				// (replaced) and later (moved).
				ts := base.Add(time.Duration(i/20) * time.Minute)
				if _, err := reg.Put(t.Context(), c.name, multitable.PutItem{
					Key: fmt.Sprintf("k%d", i%20), Timestamp: ts, Attributes: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)),
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		units = map[string]map[string]int64{}
		for _, op := range m.Usage().Operations {
			if op.Class != meter.ClassSharedTable.String() {
				continue
			}
			requests += op.Requests
			for model, u := range op.Units {
				for name, n := range u {
					if units[model] == nil {
						units[model] = map[string]int64{}
					}
					units[model][op.Op+" "+name] += n
				}
			}
		}
		return units, requests
	}
	guarded, gReq := usage(func(s store.Store) store.Store { return s })
	plain, pReq := usage(func(s store.Store) store.Store { return noGuard{s} })
	if len(plain) == 0 {
		t.Fatal("no shared-table units counted")
	}
	for model := range plain {
		if !maps.Equal(guarded[model], plain[model]) {
			t.Errorf("%s: guarded batches bill %v, separate writes %v", model, guarded[model], plain[model])
		}
	}
	if gReq >= pReq {
		t.Errorf("guarded batches made %d store calls, separate writes %d: nothing saved", gReq, pReq)
	}
}

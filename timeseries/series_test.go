package timeseries

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store/storetest"
)

// seriesOf returns the name of every series in reg that has a label with
// value v.
func seriesOf(t testing.TB, reg *prometheus.Registry, v string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == v {
					out = append(out, mf.GetName())
				}
			}
		}
	}
	return out
}

// TestDeleteRemovesSeries checks that deleting an index removes every
// metric series labelled with it: at once on the replica that deleted it,
// and at the next manager run on another replica that had reported it.
func TestDeleteRemovesSeries(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock(t0)
	st := testbackend.Pebble(t, clk.Now)
	a, regA := newService(t, st, clk.Now)
	b, regB := newService(t, st, clk.Now)

	mustCreate(t, a, hourly)
	if _, err := a.Put(ctx, "ev", []Event{ev("acct", "e1", t0, "x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "ev", []Event{ev("acct", "e2", t0.Add(-48*time.Hour), "x")}); err == nil {
		t.Fatal("an event past retention was written")
	}
	for _, svc := range []*Service{a, b} {
		if err := svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{"ebb_index_events_written_total": true, "ebb_index_write_refused_total": true, "ebb_shard_runway_seconds": true,
		"ebb_shard_runway_end_timestamp_seconds": true, "ebb_shard_table_bucket_seconds": true}
	got := map[string]bool{}
	for _, name := range seriesOf(t, regA, "ev") {
		got[name] = true
	}
	for name := range want {
		if !got[name] {
			t.Fatalf("no %s series for the index before it is deleted (got %v)", name, got)
		}
	}
	if s := seriesOf(t, regB, "ev"); len(s) != 3 {
		t.Fatalf("the other replica's series of the index: %v, want its three runway series", s)
	}

	if err := a.Delete(ctx, "ev"); err != nil {
		t.Fatal(err)
	}
	if s := seriesOf(t, regA, "ev"); len(s) != 0 {
		t.Fatalf("series of the deleted index remain: %v", s)
	}
	// The other replica learns of the delete at its next run.
	if err := b.Manager().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if s := seriesOf(t, regB, "ev"); len(s) != 0 {
		t.Fatalf("series of the deleted index remain on the other replica: %v", s)
	}
}

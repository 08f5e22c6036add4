package peers

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestIngestExpire runs the ingest-and-expire comparison at a small size:
// every store takes every event, ebb and raw Pebble free the data's space
// within the timeout, and the table names every store.
func TestIngestExpire(t *testing.T) {
	w := DefaultWorkload()
	w.Events, w.Batch, w.Writers = 20_000, 500, 2
	w.TTL, w.ReclaimTimeout = time.Second, 4*time.Second
	results, err := Run(context.Background(), w, []string{PeerEbb, PeerBadger, PeerPebble}, []bool{false, true}, 1, t.TempDir(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 6 {
		t.Fatalf("%d results, want 6", len(results))
	}
	for _, r := range results {
		if r.Rows != w.Events || r.RowsPerSecond <= 0 || r.BeforeBytes <= r.EmptyBytes {
			t.Errorf("%s, %s: %d rows at %.0f rows/s, %d bytes before from %d empty", r.Peer, syncName(r.Sync), r.Rows, r.RowsPerSecond, r.BeforeBytes, r.EmptyBytes)
		}
		if r.Peer != PeerBadger && !r.Freed {
			t.Errorf("%s, %s: not freed in %.1f s: %d bytes after, %d of them logs", r.Peer, syncName(r.Sync), r.FreeSeconds, r.AfterBytes, r.AfterLogBytes)
		}
	}
	var out strings.Builder
	WriteTable(&out, results, w)
	for _, name := range []string{PeerEbb, PeerBadger, PeerPebble} {
		if !strings.Contains(out.String(), "| "+name+" |") {
			t.Errorf("no row for %s in\n%s", name, out.String())
		}
	}
}

// BenchmarkIngest writes the workload's events in batches of 1000 from one
// writer into each store, unsynced and synced: the ingest phase of
// cmd/ingest-expire, for profiling (-cpuprofile). Compare events/s of
// ebb with badger and pebble at the same sync setting.
func BenchmarkIngest(b *testing.B) {
	w := DefaultWorkload()
	w.Events = 200_000
	events := w.events(time.Now())
	for _, name := range []string{PeerEbb, PeerBadger, PeerPebble} {
		for _, synced := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/%s", name, syncName(synced)), func(b *testing.B) {
				w := w
				w.Sync = synced
				p, err := peerOpeners[name](context.Background(), b.TempDir(), w)
				if err != nil {
					b.Fatal(err)
				}
				defer p.close()
				b.ReportAllocs()
				n := 0
				for i := 0; b.Loop(); i++ {
					lo := i * w.Batch % len(events)
					if err := p.write(events[lo : lo+w.Batch]); err != nil {
						b.Fatal(err)
					}
					n += w.Batch
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

package faultfs_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/client"
	"github.com/ebb-data/ebb/internal/faultfs"
	"github.com/ebb-data/ebb/server"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// TestFullDisk fills a 48 MiB disk under the real server, with a 16 MiB
// free-space floor: writes are refused with 507 before the disk itself
// refuses anything, reads and deletes go on, and a shard drop brings
// writes back without a restart.
func TestFullDisk(t *testing.T) {
	ctx := t.Context()
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	const quota, floor = 48 << 20, 16 << 20
	disk := faultfs.NewQuota(vfs.NewMem(), "db", quota)
	st, err := ebbpebble.Open("db", ebbpebble.Options{FS: disk, Now: now, MemTableSize: 1 << 20, MinFreeBytes: floor})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(st.Collector()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := ebb.Open(ctx, ebb.Options{Store: st, Now: now, Logger: log, Registerer: reg, ReconcileInterval: time.Hour, SweepInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv, err := server.New(server.Options{DB: db, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	c, err := client.New(client.Config{Server: ts.URL})
	if err != nil {
		t.Fatal(err)
	}

	if _, _, err := c.CreateIndex(ctx, "ev", client.IndexConfig{TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx, "ev", client.ReconcileOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateTable(ctx, "notes", client.TableConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutTableItem(ctx, "notes", "a", client.PutTableItem{Timestamp: now()}); err != nil {
		t.Fatal(err)
	}

	// Fill the disk with incompressible payloads until the floor refuses.
	payload := incompressible
	written, refused := 0, error(nil)
	for i := 0; i < 2000 && refused == nil; i++ {
		batch := make([]client.Event, 4)
		for j := range batch {
			batch[j] = client.Event{IndexID: "sensor", EventID: fmt.Sprintf("e%06d", i*4+j), Timestamp: now(), Payload: payload(i*4 + j)}
		}
		if _, refused = c.WriteEvents(ctx, "ev", batch); refused == nil {
			written += len(batch)
		}
	}
	st507, code := apiStatus(refused)
	if st507 != 507 || code != "insufficient_storage" {
		t.Fatalf("after %d events: %v, want 507 insufficient_storage", written, refused)
	}
	t.Logf("%d events of 64 KiB written, then 507: %v; disk %d of %d bytes used", written, refused, disk.Used(), quota)
	if n := disk.Refused.Load(); n != 0 {
		t.Errorf("the disk itself refused %d writes: the floor came too late", n)
	}
	if got := (counterOf(t, reg, "ebb_pebble_writes_refused_total", "insufficient_storage")); got < 1 {
		t.Errorf("ebb_pebble_writes_refused_total{reason=insufficient_storage} = %v", got)
	}

	// Reads, deletes and readiness go on.
	page, err := c.QueryEvents(ctx, "ev", client.EventQuery{IndexID: "sensor", Limit: 5})
	if err != nil || len(page.Events) != 5 {
		t.Errorf("read on a full disk: %d events, %v", len(page.Events), err)
	}
	if err := c.DeleteTableItem(ctx, "notes", "a"); err != nil {
		t.Errorf("delete on a full disk: %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("/readyz on a full disk: %v", err)
	}

	// The shard expires; the manager drops it and writes come back, with
	// no restart.
	offset.Store(int64(3 * time.Hour))
	plan, err := c.Reconcile(ctx, "ev", client.ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reconcile after 3 h: %+v", plan)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.WriteEvents(ctx, "ev", []client.Event{{IndexID: "sensor", EventID: "after", Timestamp: now(), Payload: payload(1)}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused 10 s after the drop (disk %d of %d bytes used): %v", disk.Used(), quota, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("after the drop: disk %d of %d bytes used, writes accepted", disk.Used(), quota)
	if free := (gaugeOf(t, reg, "ebb_pebble_disk_free_bytes")); free < floor {
		t.Errorf("ebb_pebble_disk_free_bytes = %v after the drop, want >= %d", free, floor)
	}
}

// counterOf and gaugeOf return the value of one series gathered from reg.
func counterOf(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	return series(t, reg, name, func(labels map[string]string) bool { return labels["reason"] == reason })
}

func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return series(t, reg, name, func(map[string]string) bool { return true })
}

func series(t *testing.T, reg *prometheus.Registry, name string, match func(map[string]string) bool) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if !match(labels) {
				continue
			}
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// incompressible is 64 KiB of pseudo-random bytes (xorshift seeded by i),
// which Pebble's compression cannot shrink, so each takes its size on disk.
func incompressible(i int) []byte {
	p := make([]byte, 64<<10)
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for j := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[j] = byte(x)
	}
	return p
}

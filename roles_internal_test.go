package ebb

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/internal/lease"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// TestPanickingPassIsRetried: a role whose pass panics keeps running and
// retries, rather than stopping quietly (a stopped shard manager would
// surface much later as no_shard).
func TestPanickingPassIsRetried(t *testing.T) {
	st, err := ebbpebble.Open("db", ebbpebble.Options{FS: vfs.NewMem(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := lease.New(lease.Options{Store: st, Role: "r", Holder: "me", Exclusive: true, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
	r := &role{
		name: "r", lease: l, interval: time.Millisecond, log: slog.New(slog.DiscardHandler),
		held: g, epoch: g, trigger: make(chan struct{}, 1),
		pass: func(context.Context) error {
			calls.Add(1)
			panic("broken pass")
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if n := calls.Load(); n < 2 {
		t.Fatalf("the panicking pass ran %d times in 10s; it must be retried", n)
	}
}

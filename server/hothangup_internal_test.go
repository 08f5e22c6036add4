package server

import (
	"context"
	"net"
	"testing"
)

// BenchmarkHangupWatch is what watching for a hang-up costs a request on
// the hot listener that ends before the watch begins (every request under
// hotHangupDelay): its cancellable context, and the timer armed and
// stopped. The baseline is the request without it.
func BenchmarkHangupWatch(b *testing.B) {
	a, z := net.Pipe()
	defer a.Close()
	defer z.Close()
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = base.Err()
		}
	})
	b.Run("watch", func(b *testing.B) {
		c := &hangupConn{Conn: a}
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithCancel(base)
			c.watch(cancel)
			_ = ctx.Err()
			c.stop()
			cancel()
		}
	})
}

package cql

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// TestClusterFaults puts a TCP proxy between the Store and the real node
// and breaks it: a node that stops answering (requests swallowed) and a
// node that goes away (connections closed, port shut) must both surface as
// store.ErrUnavailable within the configured timeout, never as a hang.

// faultProxy forwards connections to target until told to stall or die.
type faultProxy struct {
	l      net.Listener
	target string
	stall  atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{l: l, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.down)
	return p
}

func (p *faultProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		// Client to server: swallowed while stalled, so requests never
		// arrive and never get an answer.
		p.wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 && !p.stall.Load() {
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					_ = s.Close()
					return
				}
			}
		})
		p.wg.Go(func() {
			_, _ = io.Copy(c, s)
			_ = c.Close()
		})
	}
}

// down closes the port and every connection: the node is gone.
func (p *faultProxy) down() {
	_ = p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func TestClusterFaults(t *testing.T) {
	hosts := testHosts(t)
	proxy := newFaultProxy(t, hosts[0])
	o := DefaultOptions()
	o.Hosts = []string{proxy.l.Addr().String()}
	o.Keyspace = "ebbt_cqlfault_" + time.Now().Format("150405")
	o.CreateKeyspace = true
	o.Timeout = 2 * time.Second
	o.TableTimeout = time.Minute
	o = o.withDefaults()
	t.Cleanup(func() {
		if err := dropKeyspace(hosts, o.Keyspace); err != nil {
			t.Errorf("drop keyspace: %v", err)
		}
	})
	cluster, err := clusterConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	// Only the proxy: no discovery of the node's own address behind it.
	cluster.DisableInitialHostLookup = true
	session, err := connect(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newStore(t.Context(), session, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	if err := s.CreateTable(ctx, clusterSpec); err != nil {
		t.Fatal(err)
	}
	row := store.Mutation{Partition: []any{"p"}, Clustering: []any{int64(1)}, Cells: []store.Cell{{Column: "v", Value: "x"}}}
	if err := s.Write(ctx, "t", []store.Mutation{row}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "t", []any{"p"}, []any{int64(1)}); err != nil {
		t.Fatal(err)
	}
	bounded := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		if d := time.Since(start); d > o.Timeout+3*time.Second {
			t.Errorf("%s took %s with a %s timeout", what, d, o.Timeout)
		}
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", what, err)
		}
	}
	proxy.stall.Store(true)
	bounded("Get from a silent node", func() error { _, err := s.Get(ctx, "t", []any{"p"}, []any{int64(1)}); return err })
	bounded("Write to a silent node", func() error { return s.Write(ctx, "t", []store.Mutation{row}) })
	bounded("Query of a silent node", func() error {
		_, err := kit.Query(ctx, s, "t", store.Query{Partition: []any{"p"}, Limit: 10})
		return err
	})
	proxy.down()
	bounded("Get from a node that is gone", func() error { _, err := s.Get(ctx, "t", []any{"p"}, []any{int64(1)}); return err })
	bounded("Write to a node that is gone", func() error { return s.Write(ctx, "t", []store.Mutation{row}) })

	// A caller's own cancellation is not unavailability.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Get(cctx, "t", []any{"p"}, []any{int64(1)}); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v, want context.Canceled", err)
	}
}

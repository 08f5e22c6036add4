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

	gocql "github.com/apache/cassandra-gocql-driver/v2"
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
	// The keyspace, the table and its row are made straight on the node,
	// with the generous timeout every other test has: schema changes on a
	// loaded node take seconds, and this test is about the faults below,
	// not about DDL under a 2-second timeout.
	setup := openTest(t, nil, nil)
	ctx := t.Context()
	if err := setup.CreateTable(ctx, clusterSpec); err != nil {
		t.Fatal(err)
	}
	row := store.Mutation{Partition: []any{"p"}, Clustering: []any{int64(1)}, Cells: []store.Cell{{Column: "v", Value: "x"}}}
	if err := setup.Write(ctx, "t", []store.Mutation{row}); err != nil {
		t.Fatal(err)
	}

	proxy := newFaultProxy(t, hosts[0])
	o := DefaultOptions()
	o.Hosts = []string{proxy.l.Addr().String()}
	o.Keyspace = setup.Keyspace()
	o.Timeout = 2 * time.Second
	o.TableTimeout = time.Minute
	o = o.withDefaults()
	cluster, err := clusterConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	// Only the proxy: no discovery of the node's own address behind it.
	cluster.DisableInitialHostLookup = true
	session, err := connect(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newStore(ctx, session, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Get(ctx, "t", []any{"p"}, []any{int64(1)}); err != nil {
		t.Fatal(err)
	}

	// Behind the proxy the driver lists the node twice, both up: as the
	// contact point, which it holds connections to, and by the host id the
	// node reports, which it cannot route a request to. The wait for
	// schema agreement asks every node listed up for its version; it must
	// count the second as down, not fail on it until its timeout (which
	// it did, whenever the driver listed the routable one first).
	coordinator, unroutable := "", 0
	for _, h := range session.GetHosts() {
		var v gocql.UUID
		err := session.Query(`SELECT schema_version FROM system.local WHERE key = 'local'`).
			SetHostID(h.HostID()).ScanContext(ctx, &v)
		switch {
		case err == nil:
			coordinator = h.HostID()
		case errors.Is(err, gocql.ErrNoConnections):
			unroutable++
		default:
			t.Fatal(err)
		}
	}
	if coordinator == "" || unroutable == 0 {
		t.Fatalf("the driver lists %d hosts behind the proxy, %d of them unroutable: the case this test needs is gone", len(session.GetHosts()), unroutable)
	}
	if _, err := s.liveSchemaVersions(ctx, coordinator, map[string]bool{}); err != nil {
		t.Fatalf("schema versions through the proxy: %v", err)
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

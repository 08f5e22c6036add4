package timeseries

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
)

// dropRecorder records when each table was dropped, by the store's clock.
type dropRecorder struct {
	store.Store
	mu    sync.Mutex
	drops map[string]time.Time
}

func (d *dropRecorder) DropTable(ctx context.Context, name string) error {
	err := d.Store.DropTable(ctx, name)
	if err == nil {
		d.mu.Lock()
		d.drops[name] = time.Now()
		d.mu.Unlock()
	}
	return err
}

// TestEightWeeksOfWrites runs the manager loop for 8 simulated weeks at
// wall-clock time (the synctest bubble's clock, which the store uses too)
// while events are written and read, and checks the lifecycle properties:
// no write is ever refused for want of a shard; no shard is dropped before
// end + retention; every shard is dropped within one reconcile interval
// after end + retention; and a query at any moment returns exactly the
// events inside retention.
//
// The Pebble store lives outside the bubble, behind a bridge (below), so
// that Pebble's own background ticker (a 100 ms compaction granter) runs on
// real time instead of firing 48 million times in 8 simulated weeks; the
// store's clock is the bubble's, forwarded with every call.
//
// It is the package's longest test, all of it CPU on its own store, so it
// runs in parallel: beside the remote-backend variants, which wait on
// their servers, instead of before them.
func TestEightWeeksOfWrites(t *testing.T) {
	t.Parallel()
	br := newBridge(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const interval = 10 * time.Minute
		cfg := Config{Name: "ev", TableBucket: 24 * time.Hour, PartitionBucket: 6 * time.Hour, Retention: 7 * 24 * time.Hour, Runway: 2}
		rec := &dropRecorder{Store: br, drops: map[string]time.Time{}}
		svc, err := New(ctx, rec, Options{ReconcileInterval: interval})
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, svc, cfg)
		// The manager's passes, every interval, as ebb.DB's shard-manager
		// role runs them.
		loopCtx, stop := context.WithCancel(ctx)
		loopDone := make(chan error)
		go func() {
			for {
				if err := svc.Manager().RunOnce(loopCtx); err != nil && loopCtx.Err() == nil {
					loopDone <- err
					return
				}
				select {
				case <-loopCtx.Done():
					loopDone <- nil
					return
				case <-time.After(interval):
				}
			}
		}()

		start := time.Now()
		rng := rand.New(rand.NewPCG(3, 4))
		var written []Event
		checks := 0
		for step := 1; time.Since(start) < 8*7*24*time.Hour; step++ {
			time.Sleep(30 * time.Minute)
			now := time.Now()
			// One event now and one late one, up to six days old.
			batch := []Event{
				ev("acct", fmt.Sprintf("now-%d", step), now, "p"),
				ev("acct", fmt.Sprintf("late-%d", step), now.Add(-time.Duration(rng.Int64N(int64(6*24*time.Hour)))), "q"),
			}
			if _, err := svc.Put(ctx, "ev", batch); err != nil {
				t.Fatalf("at %s: write refused: %v", now, err)
			}
			written = append(written, batch...)
			if step%24 != 0 {
				continue
			}
			// Let the loop finish whatever this instant woke it for.
			synctest.Wait()
			now = time.Now()
			checks++
			got := queryAll(t, svc, Query{IndexID: "acct", Limit: 1000})
			want := map[string]bool{}
			for _, e := range written {
				if e.Timestamp.Truncate(time.Millisecond).Add(cfg.Retention).After(now) {
					want[e.EventID] = true
				}
			}
			if len(got) != len(want) {
				t.Fatalf("at %s: query returned %d events, %d inside retention", now, len(got), len(want))
			}
			for _, e := range got {
				if !want[e.EventID] {
					t.Fatalf("at %s: query returned %s, outside retention", now, e.EventID)
				}
			}
			// No shard outlives end + retention by more than one interval.
			infos, err := rec.Tables(ctx, "ev_")
			if err != nil {
				t.Fatal(err)
			}
			for _, info := range infos {
				s, _ := shardmgr.ParseShardName("ev", cfg.TableBucket, info.Spec.Name)
				if due := s.Add(cfg.TableBucket + cfg.Retention); now.Sub(due) > interval {
					t.Fatalf("at %s: %s still there, due for drop at %s", now, info.Spec.Name, due)
				}
			}
		}
		stop()
		if err := <-loopDone; err != nil {
			t.Fatal(err)
		}

		rec.mu.Lock()
		defer rec.mu.Unlock()
		// 8 weeks of daily shards with a week of retention: about 48 drops.
		if len(rec.drops) < 45 {
			t.Fatalf("only %d shards dropped", len(rec.drops))
		}
		for name, at := range rec.drops {
			s, kind := shardmgr.ParseShardName("ev", cfg.TableBucket, name)
			if kind != shardmgr.ShardOf {
				t.Fatalf("dropped %s, not a shard", name)
			}
			due := s.Add(cfg.TableBucket + cfg.Retention)
			if at.Before(due) {
				t.Errorf("%s dropped at %s, before end + retention %s", name, at, due)
			}
			if at.Sub(due) > interval {
				t.Errorf("%s dropped at %s, more than one interval after %s", name, at, due)
			}
		}
		t.Logf("%d events written, %d checks, %d shards dropped", len(written), checks, len(rec.drops))
	})
}

// bridge is a store.Store whose calls, made inside a synctest bubble, run on
// one goroutine outside it, against a Pebble store whose clock reads the
// bubble's time as it was when the call was made. Calls are serialized.
type bridge struct {
	st    store.Store
	mu    sync.Mutex
	clock atomic.Int64 // Unix ns of the bubble's clock at the current call
	req   chan func()
	done  chan struct{}
}

func newBridge(t *testing.T) *bridge {
	b := &bridge{req: make(chan func()), done: make(chan struct{})}
	b.st = testbackend.Pebble(t, func() time.Time { return time.Unix(0, b.clock.Load()).UTC() })
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for f := range b.req {
			f()
			b.done <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		close(b.req)
		<-stopped
	})
	return b
}

func (b *bridge) call(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clock.Store(time.Now().UnixNano())
	b.req <- f
	<-b.done
}

func (b *bridge) CreateTable(ctx context.Context, spec store.TableSpec) (err error) {
	b.call(func() { err = b.st.CreateTable(outside(ctx), spec) })
	return err
}

func (b *bridge) DropTable(ctx context.Context, name string) (err error) {
	b.call(func() { err = b.st.DropTable(outside(ctx), name) })
	return err
}

func (b *bridge) Tables(ctx context.Context, prefix string) (out []store.TableInfo, err error) {
	b.call(func() { out, err = b.st.Tables(outside(ctx), prefix) })
	return out, err
}

func (b *bridge) SetCapacity(ctx context.Context, table string, c store.Capacity) (err error) {
	b.call(func() { err = b.st.SetCapacity(outside(ctx), table, c) })
	return err
}

func (b *bridge) Write(ctx context.Context, table string, batch []store.Mutation) (err error) {
	b.call(func() { err = b.st.Write(outside(ctx), table, batch) })
	return err
}

func (b *bridge) Get(ctx context.Context, table string, partition, clustering []any) (row store.Row, err error) {
	b.call(func() { row, err = b.st.Get(outside(ctx), table, partition, clustering) })
	return row, err
}

func (b *bridge) Spec(ctx context.Context, name string) (spec store.TableSpec, err error) {
	b.call(func() { spec, err = b.st.Spec(outside(ctx), name) })
	return spec, err
}

func (b *bridge) Scan(ctx context.Context, table string, q store.Query, fn func(*store.RawRow) error) (next []byte, err error) {
	b.call(func() { next, err = b.st.Scan(outside(ctx), table, q, fn) })
	return next, err
}

func (b *bridge) QueryIndex(ctx context.Context, table, index string, partition []any, value any) (keys [][]any, err error) {
	b.call(func() { keys, err = b.st.QueryIndex(outside(ctx), table, index, partition, value) })
	return keys, err
}

func (b *bridge) DeletePartition(ctx context.Context, table string, partition []any) (err error) {
	b.call(func() { err = b.st.DeletePartition(outside(ctx), table, partition) })
	return err
}

func (b *bridge) Stats(ctx context.Context, table string) (s store.TableStats, err error) {
	b.call(func() { s, err = b.st.Stats(outside(ctx), table) })
	return s, err
}

func (b *bridge) Capabilities() store.Capabilities { return b.st.Capabilities() }

// Close is the test's business (t.Cleanup), not the Service's.
func (b *bridge) Close() error { return nil }

// outside strips a bubble's context of its cancellation for the call the
// bridge makes outside the bubble: a select on the bubble's Done channel
// from outside it is a fatal error, and Pebble selects on its context
// while it waits for another reader of the same block (a compaction, say).
func outside(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

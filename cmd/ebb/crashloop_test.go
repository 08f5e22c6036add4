package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	ebbclient "github.com/ebb-data/ebb/client"
)

// TestCrashLoop SIGKILLs `ebb serve` several times while concurrent HTTP
// writers add events to an index, items to lists and items to a shared
// table, and after each restart reads back every write that was
// acknowledged before the kill, whatever the round it was made in.
func TestCrashLoop(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	const rounds, perKind = 4, 2
	feature := ebbclient.ListFeatureID{EntityType: "user", Feature: "seen", Version: "v1"}

	type ack struct{ kind, key string }
	var mu sync.Mutex
	var acked []ack
	for round := range rounds {
		p := startServe(t, "--addr", "127.0.0.1:0", "--data", data)
		c, err := ebbclient.New(ebbclient.Config{Server: p.url})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if round == 0 {
			if _, _, err := c.CreateIndex(ctx, "clicks", ebbclient.IndexConfig{TableBucket: time.Hour, PartitionBucket: time.Minute, Retention: 24 * time.Hour}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Reconcile(ctx, "clicks", ebbclient.ReconcileOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.CreateListFeature(ctx, feature, 24*time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.CreateTable(ctx, "carts", ebbclient.TableConfig{}); err != nil {
				t.Fatal(err)
			}
		}
		// Everything acknowledged so far, in any round, is served.
		mu.Lock()
		before := append([]ack(nil), acked...)
		mu.Unlock()
		checkCrashAcked(t, c, feature, before, func(a ack) (string, string) { return a.kind, a.key })
		t.Logf("round %d: all %d acknowledged writes served after restart", round, len(before))

		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, kind := range []string{"event", "list", "table"} {
			for w := range perKind {
				wg.Go(func() {
					for i := 0; wctx.Err() == nil; i++ {
						key := fmt.Sprintf("r%d-w%d-%05d", round, w, i)
						rctx, cancel := context.WithTimeout(wctx, 10*time.Second)
						var err error
						switch kind {
						case "event":
							_, err = c.WriteEvents(rctx, "clicks", []ebbclient.Event{{IndexID: "page", EventID: key, Timestamp: time.Now()}})
						case "list":
							_, err = c.AddListItems(rctx, feature, "u1", []ebbclient.ListItem{{Value: []byte(key), Timestamp: time.Now()}})
						case "table":
							_, err = c.PutTableItem(rctx, "carts", key, ebbclient.PutTableItem{Timestamp: time.Now(), Attributes: map[string]string{"k": key}})
						}
						cancel()
						if err != nil {
							return // the server is gone: unacknowledged
						}
						mu.Lock()
						acked = append(acked, ack{kind, key})
						mu.Unlock()
					}
				})
			}
		}
		time.Sleep(700 * time.Millisecond)
		_ = p.cmd.Process.Kill() // SIGKILL under load
		p.wait(t, 10*time.Second)
		stop()
		wg.Wait()
	}
	p := startServe(t, "--addr", "127.0.0.1:0", "--data", data)
	c, err := ebbclient.New(ebbclient.Config{Server: p.url})
	if err != nil {
		t.Fatal(err)
	}
	checkCrashAcked(t, c, feature, acked, func(a ack) (string, string) { return a.kind, a.key })
	t.Logf("after %d SIGKILLs: all %d acknowledged writes served", rounds, len(acked))
	if len(acked) < rounds*3*perKind {
		t.Fatalf("only %d writes acknowledged in %d rounds", len(acked), rounds)
	}
}

// checkCrashAcked reads every acknowledged write back: events by a full
// scan of the index, list items from the list, shared-table items one by
// one.
func checkCrashAcked[A any](t *testing.T, c *ebbclient.Client, feature ebbclient.ListFeatureID, acked []A, split func(A) (kind, key string)) {
	t.Helper()
	ctx := t.Context()
	events, items := map[string]bool{}, map[string]bool{}
	for e, err := range c.Events(ctx, "clicks", ebbclient.EventQuery{IndexID: "page", Limit: 10000}) {
		if err != nil {
			t.Fatal(err)
		}
		events[e.EventID] = true
	}
	for it, err := range c.AllListItems(ctx, feature, "u1", ebbclient.ListQuery{Limit: 10000}) {
		if err != nil {
			t.Fatal(err)
		}
		items[string(it.Value)] = true
	}
	lost := 0
	for _, a := range acked {
		kind, key := split(a)
		ok := true
		switch kind {
		case "event":
			ok = events[key]
		case "list":
			ok = items[key]
		case "table":
			_, err := c.TableItem(ctx, "carts", key)
			ok = err == nil
		}
		if !ok {
			if lost++; lost <= 5 {
				t.Errorf("acknowledged %s %s lost", kind, key)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}
}

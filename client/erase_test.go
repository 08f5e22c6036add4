package client_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

// TestEraseEvents erases through the client: one event, a range shard by
// shard with progress, everything of an index_id in one request, and bad
// requests refused before anything is deleted.
func TestEraseEvents(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client(t, rootToken)
	cfg := client.IndexConfig{TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 3 * time.Hour, Runway: 2}
	if _, _, err := c.CreateIndex(ctx, "events", cfg); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var events []client.Event
	for i := range 40 {
		for _, id := range []string{"acc/1#.", "acc_2"} {
			events = append(events, client.Event{IndexID: id, EventID: fmt.Sprintf("e%02d", i), Timestamp: now.Add(-time.Duration(i) * 4 * time.Minute)})
		}
	}
	if _, err := c.WriteEvents(ctx, "events", events); err != nil {
		t.Fatal(err)
	}
	count := func(id string) int {
		t.Helper()
		n := 0
		for _, err := range c.Events(ctx, "events", client.EventQuery{IndexID: id, Limit: 1000}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}

	for name, bad := range map[string]client.EventErase{
		"no index_id":           {},
		"from after to":         {IndexID: "acc_2", From: now, To: now.Add(-time.Hour)},
		"event_id without time": {IndexID: "acc_2", EventID: "e01"},
		"timestamp without id":  {IndexID: "acc_2", Timestamp: now},
		"range with progress":   {IndexID: "acc_2", From: now, To: now.Add(-time.Hour), Progress: func(client.EraseProgress) {}},
	} {
		if _, err := c.EraseEvents(ctx, "events", bad); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := c.EraseEvents(ctx, "nope", client.EventErase{IndexID: "acc_2"}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("unknown index: %v", err)
	}
	if n := count("acc_2"); n != 40 {
		t.Fatalf("refused erases removed events: %d of 40 left", n)
	}

	// One event.
	one := client.EventErase{IndexID: "acc_2", EventID: "e03", Timestamp: now.Add(-12 * time.Minute)}
	if res, err := c.EraseEvents(ctx, "events", one); err != nil || res.Removed != 1 || res.Shards != 1 {
		t.Fatalf("erase one: %+v %v", res, err)
	}
	if res, err := c.EraseEvents(ctx, "events", one); err != nil || res.Removed != 0 {
		t.Fatalf("erase one again: %+v %v", res, err)
	}

	// A range over two hours (e01..e30: 4..120 minutes ago), shard by
	// shard with progress.
	var progress []client.EraseProgress
	rng := client.EventErase{IndexID: "acc/1#.", From: now.Add(-2 * time.Hour), To: now, Progress: func(p client.EraseProgress) { progress = append(progress, p) }}
	res, err := c.EraseEvents(ctx, "events", rng)
	if err != nil || res.Removed != 30 {
		t.Fatalf("range erase: %+v %v, want 30 removed", res, err)
	}
	if len(progress) != res.Shards || len(progress) < 2 || len(progress) > 3 || progress[len(progress)-1].TotalRemoved != 30 || progress[len(progress)-1].Done != len(progress) {
		t.Fatalf("progress %+v for %+v", progress, res)
	}
	if res, err := c.EraseEvents(ctx, "events", rng); err != nil || res.Removed != 0 {
		t.Fatalf("range erase again: %+v %v", res, err)
	}

	// Everything of acc/1#. in one request; acc_2 keeps its 39.
	if res, err := c.EraseEvents(ctx, "events", client.EventErase{IndexID: "acc/1#."}); err != nil || res.Removed != 10 || res.Shards != 6 {
		t.Fatalf("erase all: %+v %v, want 10 removed from 6 shards", res, err)
	}
	if n := count("acc/1#."); n != 0 {
		t.Fatalf("%d events left after erasing all", n)
	}
	if n := count("acc_2"); n != 39 {
		t.Fatalf("acc_2 holds %d, want 39", n)
	}
}

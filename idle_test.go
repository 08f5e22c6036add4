package ebb_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/multitable"
)

// usageDiff returns the requests of each (class, op) between two usage
// reports.
func usageDiff(before, after meter.Usage) map[[2]string]int64 {
	out := map[[2]string]int64{}
	for _, o := range after.Operations {
		out[[2]string{o.Class, o.Op}] += o.Requests
	}
	for _, o := range before.Operations {
		out[[2]string{o.Class, o.Op}] -= o.Requests
	}
	for k, n := range out {
		if n == 0 {
			delete(out, k)
		}
	}
	return out
}

// TestIdleFloor runs a DB on the embedded backend with the meter and
// nothing to do for a simulated hour, inside a testing/synctest bubble
// (the clock is fake and moves when every goroutine waits), and holds
// what the meter counts to the idle floor: at most one expiry-index read
// per second (the sweeper reads its due markers once per idle interval),
// no create_table, no catalog write but the lease renewals, at most two
// per lease period per role, and no catalog read but the shard manager's
// listing of indexes and the TTL rewriter's listings of its jobs. Then a
// row due soon is written: the sweeper, asleep until its next re-check, is
// woken by the write and deletes the row within two sweep intervals of
// its expiry.
func TestIdleFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		db, err := ebb.Open(ctx, ebb.Options{Store: memStore(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		o := ebb.DefaultOptions()
		// Start-up creates tables and takes the leases; the floor is what
		// follows.
		time.Sleep(time.Minute)
		before, err := db.Usage(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		const idle = time.Hour
		time.Sleep(idle)
		after, err := db.Usage(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		d := usageDiff(before, after)
		t.Logf("requests over %s idle: %v", idle, d)
		seconds := int64(idle / time.Second)
		var indexReads, catalogWrites int64
		for k, n := range d {
			switch {
			case k[1] == "create_table":
				t.Errorf("%d create_table calls on %s at idle, want none", n, k[0])
			case k[0] == meter.ClassExpiryIndex.String() && (k[1] == "query" || k[1] == "get"):
				indexReads += n
			case k[0] == meter.ClassCatalog.String() && k[1] == "conditional":
				catalogWrites += n
			case k[0] == meter.ClassCatalog.String() && k[1] == "query":
				// The shard manager's pass lists the (no) indexes, the
				// TTL rewriter the (no) jobs. A lease renewal reads
				// nothing.
			default:
				t.Errorf("%d %s %s requests at idle, want none", n, k[0], k[1])
			}
		}
		if indexReads > seconds {
			t.Errorf("%d expiry-index reads in %s, want at most one per second", indexReads, idle)
		}
		// Two per lease period per role, and one more per role at the edge
		// of the measured span.
		periods := int64(idle / o.LeaseDuration)
		if limit := 2 * (2*periods + 1); catalogWrites > limit {
			t.Errorf("%d lease writes in %s, want at most two per lease period per role (%d)", catalogWrites, idle, limit)
		}

		// A row due soon, written after the long idle sleep, two seconds
		// after the sweeper's last re-check of its markers (it re-checks
		// every expiry.Options.IdleInterval, 10 s), so that only the
		// write's wake-up has it swept on time.
		time.Sleep(2 * time.Second)
		if _, _, err := db.Tables().CreateTable(ctx, "t", multitable.Config{}); err != nil {
			t.Fatal(err)
		}
		ttl := 3 * time.Second
		item, err := db.Tables().Put(ctx, "t", multitable.PutItem{Key: "k", Timestamp: time.Now(), TTL: &ttl})
		if err != nil {
			t.Fatal(err)
		}
		swept := func() int64 {
			t.Helper()
			u, err := db.Usage(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range u.Operations {
				if o.Class == meter.ClassSharedTable.String() && o.Op == "sweep_delete" {
					return o.Rows
				}
			}
			return 0
		}
		time.Sleep(time.Until(item.ExpiresAt) - time.Millisecond)
		synctest.Wait()
		if n := swept(); n != 0 {
			t.Fatalf("%d rows swept before the item expired", n)
		}
		time.Sleep(time.Until(item.ExpiresAt) + 2*o.SweepInterval)
		synctest.Wait()
		// The item and its listing entry.
		if n := swept(); n < 2 {
			t.Fatalf("%d rows swept two sweep intervals after the item expired, want the item and its listing entry: the write did not wake the sweeper", n)
		}
	})
}

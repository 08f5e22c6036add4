package ebb_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ebb-data/ebb/timeseries"
)

// Erase an account's events from an index, for an erasure request: every
// event of one index_id in every shard, reporting each shard as it is
// done; then one event by its key. Erasing again removes nothing more.
func ExampleDB_Indexes_erase() {
	db, done := openExample()
	defer done()
	ctx := context.Background()

	if _, _, err := db.Indexes().Create(ctx, timeseries.Config{
		Name: "events", TableBucket: 24 * time.Hour, PartitionBucket: time.Hour, Retention: 3 * 24 * time.Hour,
	}); err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	if _, err := db.Indexes().WriteEvents(ctx, "events", []timeseries.Event{
		{IndexID: "acct_1", EventID: "login", Timestamp: now.Add(-30 * time.Hour)},
		{IndexID: "acct_1", EventID: "logout", Timestamp: now.Add(-time.Hour)},
		{IndexID: "acct_2", EventID: "login", Timestamp: now.Add(-time.Hour)},
	}); err != nil {
		log.Fatal(err)
	}
	shards := 0
	res, err := db.Indexes().EraseEvents(ctx, "events", timeseries.Erase{
		IndexID:  "acct_1",
		Progress: func(p timeseries.EraseProgress) { shards = p.Done },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("acct_1 removed:", res.Removed, "every shard visited:", shards == res.Shards)

	one := timeseries.Erase{IndexID: "acct_2", Timestamp: now.Add(-time.Hour), EventID: "login"}
	for range 2 {
		res, err := db.Indexes().EraseEvents(ctx, "events", one)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("acct_2 removed:", res.Removed)
	}
	// Output:
	// acct_1 removed: 2 every shard visited: true
	// acct_2 removed: 1
	// acct_2 removed: 0
}

package ebb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// openExample opens a DB on the embedded store in a fresh directory.
func openExample() (*ebb.DB, func()) {
	dir, err := os.MkdirTemp("", "ebb-example-")
	if err != nil {
		log.Fatal(err)
	}
	db, err := ebb.Open(context.Background(), ebb.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	return db, func() {
		if err := db.Close(); err != nil {
			log.Fatal(err)
		}
		_ = os.RemoveAll(dir)
	}
}

// Open the embedded store in a directory. Close stops the background
// shard manager and sweeper and closes the store.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "ebb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := ebb.Open(context.Background(), ebb.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fmt.Println("backend:", db.Capabilities().Backend)
	// Output: backend: pebble
}

// An index kept six weeks in weekly shards: the shard manager creates the
// shards ahead and drops a whole week once it is past retention, instead
// of deleting its rows one by one.
func ExampleDB_Indexes() {
	db, done := openExample()
	defer done()
	ctx := context.Background()

	week := 7 * 24 * time.Hour
	if _, _, err := db.Indexes().Create(ctx, timeseries.Config{
		Name: "events", TableBucket: week, PartitionBucket: 24 * time.Hour, Retention: 6 * week,
	}); err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	if _, err := db.Indexes().WriteEvents(ctx, "events", []timeseries.Event{
		{IndexID: "acct_1", EventID: "login", Timestamp: now.Add(-2 * time.Hour), Payload: []byte(`{"ip":"10.0.0.1"}`)},
		{IndexID: "acct_1", EventID: "logout", Timestamp: now.Add(-time.Hour)},
		{IndexID: "acct_2", EventID: "login", Timestamp: now.Add(-time.Hour)},
	}); err != nil {
		log.Fatal(err)
	}
	page, err := db.Indexes().QueryEvents(ctx, "events", timeseries.Query{
		IndexID: "acct_1", From: now.Add(-24 * time.Hour), To: now, Desc: true, // no Limit: a page of store.DefaultLimit
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range page.Events {
		fmt.Println(ev.EventID)
	}
	// An event older than the retention is refused: it would already be
	// gone.
	_, err = db.Indexes().WriteEvents(ctx, "events", []timeseries.Event{{IndexID: "acct_1", EventID: "old", Timestamp: now.Add(-7 * week)}})
	fmt.Println(errors.Is(err, timeseries.ErrExpired))
	// Output:
	// logout
	// login
	// true
}

// A feature-store list: per-entity items, newest first, each expiring its
// feature's TTL after its own timestamp. Deleting a feature version drops
// one table.
func ExampleDB_Lists() {
	db, done := openExample()
	defer done()
	ctx := context.Background()

	id := lists.FeatureID{EntityType: "user", Feature: "recently_viewed", Version: "v1"}
	if _, _, err := db.Lists().CreateFeature(ctx, id, 30*24*time.Hour); err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	res, err := db.Lists().Add(ctx, id, "user_42", []lists.Item{
		{Value: []byte("post_1"), Timestamp: now.Add(-3 * time.Minute)},
		{Value: []byte("post_2"), Timestamp: now.Add(-2 * time.Minute)},
		{Value: []byte("post_3"), Timestamp: now.Add(-40 * 24 * time.Hour)}, // already past the TTL
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written:", res.Written, "skipped:", res.SkippedExpired)
	items, err := db.Lists().Get(ctx, id, "user_42", time.Time{}, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range items {
		fmt.Println(string(it.Value))
	}
	// Output:
	// written: 2 skipped: 1
	// post_2
	// post_1
}

// A list feature version in the drop expiry mode: its items are hidden at
// their expiry like any other, but leave the disk only when the version is
// deleted, with no expiry-index entry and no sweeper delete meanwhile. The
// embedded store has no native TTL, so it refuses the native mode.
func ExampleDB_Lists_expiryModes() {
	db, done := openExample()
	defer done()
	ctx := context.Background()

	id := lists.FeatureID{EntityType: "user", Feature: "recently_viewed", Version: "v2"}
	f, _, err := db.Lists().CreateFeatureWith(ctx, id, lists.FeatureConfig{TTL: 30 * 24 * time.Hour, Expiry: store.ExpiryDrop})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("expiry:", f.Expiry)
	_, _, err = db.Lists().CreateFeatureWith(ctx, id, lists.FeatureConfig{TTL: 30 * 24 * time.Hour, Expiry: store.ExpiryNative})
	fmt.Println("native refused:", errors.Is(err, store.ErrNativeTTLUnsupported))
	// Back to the backend's default mode for the items written from now on.
	f, _, err = db.Lists().CreateFeatureWith(ctx, id, lists.FeatureConfig{TTL: 30 * 24 * time.Hour, Expiry: store.ExpirySweep})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("expiry:", f.Expiry)
	// Output:
	// expiry: drop
	// native refused: true
	// expiry: sweep
}

// A shared table: many small logical tables multiplexed into one physical
// table, each with its own default TTL.
func ExampleDB_Tables() {
	db, done := openExample()
	defer done()
	ctx := context.Background()

	if _, _, err := db.Tables().CreateTable(ctx, "customer_a.sessions", multitable.Config{DefaultTTL: time.Hour}); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Tables().Put(ctx, "customer_a.sessions", multitable.PutItem{
		Key: "s1", Timestamp: time.Now(), Attributes: json.RawMessage(`{"user":"u1"}`),
	}); err != nil {
		log.Fatal(err)
	}
	item, err := db.Tables().Get(ctx, "customer_a.sessions", "s1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(item.Attributes), "expires within the hour:", time.Until(item.ExpiresAt) <= time.Hour)
	// Output: {"user":"u1"} expires within the hour: true
}

// A row with its own TTL is invisible from the millisecond it expires, and
// the sweeper deletes it physically within seconds.
func ExampleDB_Tables_ttl() {
	db, done := openExample()
	defer done()
	ctx := context.Background()

	if _, _, err := db.Tables().CreateTable(ctx, "otp_codes", multitable.Config{}); err != nil {
		log.Fatal(err)
	}
	ttl := 200 * time.Millisecond
	if _, err := db.Tables().Put(ctx, "otp_codes", multitable.PutItem{
		Key: "user_42", Timestamp: time.Now(), Attributes: json.RawMessage(`{"code":"913204"}`), TTL: &ttl,
	}); err != nil {
		log.Fatal(err)
	}
	_, err := db.Tables().Get(ctx, "otp_codes", "user_42")
	fmt.Println("now:", err == nil)
	time.Sleep(ttl)
	_, err = db.Tables().Get(ctx, "otp_codes", "user_42")
	fmt.Println("after its TTL:", errors.Is(err, store.ErrNotFound))
	// Output:
	// now: true
	// after its TTL: true
}

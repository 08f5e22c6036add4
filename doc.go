// Package ebb is a data layer for data that must expire: time-sharded
// indexes whose old shards are dropped whole, feature-store lists and many
// small shared tables, with expiry that is exact on read (to the
// millisecond) and physical within seconds.
//
// It runs embedded on one machine (Pebble, no set-up) or on the stores
// teams already operate: DynamoDB or ScyllaDB Alternator (store/dynamo) and
// Cassandra, ScyllaDB or Amazon Keyspaces (store/cql). Several processes
// may open one shared backend: the shard manager and the expiry sweeper
// then run on one of them at a time, under a lease with a fencing epoch.
//
// Open a DB, use its features, close it:
//
//	db, err := ebb.Open(ctx, ebb.Options{Dir: "./ebb-data"})
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//
//	// An index kept six weeks, one shard table per week.
//	_, _, err = db.Indexes().Create(ctx, timeseries.Config{
//		Name: "events", TableBucket: 7 * 24 * time.Hour,
//		PartitionBucket: 24 * time.Hour, Retention: 6 * 7 * 24 * time.Hour,
//	})
//	_, err = db.Indexes().WriteEvents(ctx, "events", []timeseries.Event{{
//		IndexID: "acct_1", EventID: "e1", Timestamp: time.Now(), Payload: []byte("{}"),
//	}})
//	page, err := db.Indexes().QueryEvents(ctx, "events", timeseries.Query{
//		IndexID: "acct_1", From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute),
//	})
//
// Open starts the background roles (the shard manager that creates shards
// ahead and drops expired ones, and the sweeper that deletes rows past
// their own TTL); Close stops them and waits for them before closing the
// store. The examples show lists, shared tables and rows with their own
// TTL. The HTTP server (package server) and the ebb command are built on
// this package; package client talks to a running server.
package ebb

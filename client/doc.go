// Package client is a typed Go client for ebb's HTTP API (docs/api.md,
// docs/openapi.yaml): one method per route, request and response structs
// with Go types (time.Time, time.Duration, []byte), and errors that keep the
// server's code.
//
// Create a Client once and share it; it is safe for concurrent use. Every
// call takes a context, which bounds the request:
//
//	c, err := client.New(client.Config{Server: "http://127.0.0.1:7070", Token: os.Getenv("EBB_TOKEN")})
//	if err != nil {
//		return err
//	}
//	// An index kept six weeks, one shard table per week.
//	_, _, err = c.CreateIndex(ctx, "events", client.IndexConfig{
//		TableBucket: 7 * 24 * time.Hour, PartitionBucket: 24 * time.Hour, Retention: 6 * 7 * 24 * time.Hour,
//	})
//	_, err = c.WriteEvents(ctx, "events", []client.Event{
//		{IndexID: "acct_1", EventID: "e1", Timestamp: time.Now(), Payload: []byte("{}")},
//	})
//	// Every event of the last hour, newest first, page after page.
//	for ev, err := range c.Events(ctx, "events", client.EventQuery{
//		IndexID: "acct_1", From: time.Now().Add(-time.Hour), Desc: true,
//	}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(ev.Timestamp, ev.EventID)
//	}
//
// An error the server answers is an *APIError carrying the HTTP status, the
// API's code and its message. Branch on the code with errors.Is and the
// sentinels, never on the message:
//
//	_, err = c.Index(ctx, "nope")
//	if errors.Is(err, client.ErrNotFound) {
//		// create it
//	}
//
// Every write in the API is an idempotent upsert or delete, so a call that
// failed with ErrUnavailable (the backend is down or the server sheds load;
// APIError.RetryAfter says when to come back) may be retried as it is. The
// client itself never retries.
//
// When nothing listens at the server's address the error matches
// ErrNoServer and says how to start one.
package client

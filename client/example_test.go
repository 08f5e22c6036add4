package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ebb-data/ebb/client"
)

// Connect to a server, with the token from the environment when the
// server has an auth file.
func ExampleNew() {
	c, err := client.New(client.Config{Server: "http://127.0.0.1:7070", Token: os.Getenv("EBB_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Health(context.Background()); errors.Is(err, client.ErrNoServer) {
		log.Fatal(err) // no server at 127.0.0.1:7070 — start one with `ebb serve`
	}
}

// Read every event of the last day, newest first, page after page.
func ExampleClient_Events() {
	c, err := client.New(client.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	q := client.EventQuery{IndexID: "acct_1", From: time.Now().Add(-24 * time.Hour), Desc: true, Limit: 1000}
	for ev, err := range c.Events(ctx, "events", q) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Timestamp, ev.EventID, len(ev.Payload))
	}
}

// Create an index once: a repeated create of the same configuration is
// no error, another configuration is a conflict.
func ExampleClient_CreateIndex() {
	c, err := client.New(client.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_, created, err := c.CreateIndex(context.Background(), "events", client.IndexConfig{
		TableBucket: 7 * 24 * time.Hour, PartitionBucket: 24 * time.Hour, Retention: 6 * 7 * 24 * time.Hour,
	})
	switch {
	case errors.Is(err, client.ErrConflict):
		log.Fatal("an index named events exists with another configuration")
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println("created:", created)
}

// Branch on the API's error code, and back off as the server asks when it
// sheds load. Every write is safe to repeat.
func ExampleAPIError() {
	c, err := client.New(client.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	item := client.PutTableItem{Timestamp: time.Now(), Attributes: map[string]any{"total": 42}}
	for {
		_, err = c.PutTableItem(ctx, "orders", "o-1", item)
		var ae *client.APIError
		if errors.As(err, &ae) && errors.Is(err, client.ErrUnavailable) && ae.RetryAfter > 0 {
			time.Sleep(ae.RetryAfter)
			continue
		}
		break
	}
	if errors.Is(err, client.ErrNotFound) {
		log.Fatal("no table orders: create it with c.CreateTable")
	}
}

package cql

import (
	"context"
	"errors"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// Client runs statements of its caller's own on a CQL cluster, with a
// Store's connection set-up, per-operation timeout, retries and error
// mapping. It is for tables ebb does not own and does not lay out, such as
// a legacy table an index migrates off (package migrate/cqllegacy).
// Statements name their keyspace. A Client is safe for concurrent use.
type Client struct {
	session  *gocql.Session
	provider Provider
	retry    retryPolicy
	// owned is set when Close closes the session (Dial); a Store's
	// Client shares the Store's session, which the Store closes.
	owned bool
	core  *remote.Core
}

// Dial connects to the cluster opts names, as Open does, and detects its
// provider; nothing is created. Only the connection options count:
// Keyspace may be empty, CreateKeyspace, TTLMargin, Now and Registerer are
// unused. Close the Client when done.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	check := opts
	if check.Keyspace == "" {
		// Statements of a Client name their keyspace: any valid name
		// passes the check.
		check.Keyspace = "system"
	}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	session, err := openSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	p, err := detectProvider(ctx, session)
	if err != nil {
		session.Close()
		return nil, mapErr(ctx, "cql: detect provider", err)
	}
	return &Client{
		session: session, provider: p, owned: true,
		core: remote.NewCore(opts.Common, reservedPrefix), retry: retryPolicy{opts.RetryPolicy(retryBase)},
	}, nil
}

// Client returns a Client on the Store's own session, timeout and retries
// (its retries are counted in the Store's metrics). It lives as long as
// the Store; its Close ends the Client alone, leaving the session open.
func (s *Store) Client() *Client {
	return &Client{session: s.session, provider: s.provider, core: remote.NewCore(s.opts.Common, reservedPrefix), retry: s.retry}
}

// Session returns the driver session the Client runs on.
func (c *Client) Session() *gocql.Session { return c.session }

// Provider reports the kind of cluster the Client talks to.
func (c *Client) Provider() Provider { return c.provider }

// Do runs fn, which issues statements on Session with the context it is
// given, bounded by the Client's timeout. What the cluster refused without
// doing, and reads (and, when idempotent, writes) that timed out, are
// retried with backoff, fn being called again; fn must start afresh each
// time. The error is mapped onto the store sentinels (store.ErrThrottled,
// store.ErrUnavailable, store.ErrTableNotFound, store.ErrInvalid, ...);
// gocql.ErrNotFound becomes store.ErrNotFound. op names the operation in
// the message.
func (c *Client) Do(ctx context.Context, op string, idempotent bool, fn func(ctx context.Context) error) error {
	ctx, cancel, err := c.core.Begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	err = c.retry.do(ctx, idempotent, fn)
	if errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return mapErr(ctx, op, err)
}

// Close closes a session the Client dialled; a Store's Client leaves the
// Store's session open. It is safe to call more than once.
func (c *Client) Close() error {
	if !c.core.Close() || !c.owned {
		return nil
	}
	c.session.Close()
	return nil
}

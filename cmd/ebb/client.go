package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

// defaultServer is where the CLI looks for a server when neither --server
// nor EBB_SERVER says otherwise: the address `ebb serve` listens on by
// default.
const defaultServer = ebbclient.DefaultServer

// client is the CLI's connection to a running ebb server, shared by every
// command group that talks to one. The root command's persistent flags
// fill it in; api turns it into a client.Client when a command runs.
type client struct {
	// server and token hold the flag values; empty means "use the
	// environment", resolved when a command runs so that a token never
	// shows up as a default in --help.
	server, token string
	// http, when set, sends the requests (tests); nil is a client with a
	// bound on each whole request.
	http *http.Client
}

// addFlags adds --server and --token to root, for every command.
func (c *client) addFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&c.server, "server", "", "URL of the ebb server (default $EBB_SERVER, else "+defaultServer+")")
	f.StringVar(&c.token, "token", "", "bearer token for a server with --auth-file (default $EBB_TOKEN)")
}

// serverURL is the server the flags and the environment name.
func (c *client) serverURL() string {
	if c.server != "" {
		return c.server
	}
	if s := os.Getenv("EBB_SERVER"); s != "" {
		return s
	}
	return defaultServer
}

// api returns a client for the server the flags and the environment name.
func (c *client) api() (*ebbclient.Client, error) {
	token := c.token
	if token == "" {
		token = os.Getenv("EBB_TOKEN")
	}
	hc := c.http
	if hc == nil {
		// A bound on a whole request keeps a wedged server from hanging a
		// script forever; the API's largest requests finish far sooner.
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	s := c.serverURL()
	api, err := ebbclient.New(ebbclient.Config{Server: s, Token: token, HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("server URL %q (from --server or $EBB_SERVER): want http://HOST:PORT or https://HOST:PORT", s)
	}
	return api, nil
}

// explain adds to an error what the person at the terminal can do about
// it, where the error alone does not say. It adds it once: an error it
// has explained already (a command explains, then run does) is returned
// as it is.
func explain(err error) error {
	var done *explained
	if err == nil || errors.As(err, &done) {
		return err
	}
	if e := explainOnce(err); e != err {
		return &explained{e}
	}
	return err
}

// explained is an error explain has added its hint to.
type explained struct{ error }

func (e *explained) Unwrap() error { return e.error }

func explainOnce(err error) error {
	var ae *ebbclient.APIError
	switch {
	case errors.Is(err, ebbclient.ErrNoServer):
		return fmt.Errorf("%w, or point --server or $EBB_SERVER at a running one", err)
	case !errors.As(err, &ae):
		return err
	case errors.Is(err, ebbclient.ErrUnauthenticated):
		return fmt.Errorf("%w; pass a token with --token or $EBB_TOKEN", err)
	case errors.Is(err, ebbclient.ErrPermissionDenied):
		return fmt.Errorf("%w; use a token with a scope for it (scopes: docs/api.md, Auth)", err)
	case errors.Is(err, ebbclient.ErrMethodNotAllowed), ae.Code == ebbclient.CodeNotFound && strings.Contains(ae.Message, "no such route"):
		return fmt.Errorf("%w; the server does not have this route: is it an ebb server of this version (ebb version)?", err)
	case errors.Is(err, ebbclient.ErrUnavailable) && ae.RetryAfter > 0:
		return fmt.Errorf("%w; retry in %s", err, ae.RetryAfter)
	case errors.Is(err, ebbclient.ErrUnavailable):
		return fmt.Errorf("%w; the backend is down or busy: retry shortly (every write is safe to repeat)", err)
	case errors.Is(err, ebbclient.ErrNoShard) && strings.Contains(ae.Message, "past the runway"):
		// The manager is healthy: the time is beyond what it creates.
		return err
	case errors.Is(err, ebbclient.ErrNoShard):
		return fmt.Errorf("%w; the shard manager has not kept up: check the server's log, then `ebb index apply NAME`", err)
	case errors.Is(err, ebbclient.ErrInvalidArgument):
		// The server names the API's fields; a person at the command
		// line set them with flags.
		return errors.New(flagNames.Replace(err.Error()))
	}
	return err
}

// flagNames turns the API's field names in messages into the flags that
// set them.
var flagNames = strings.NewReplacer(
	"table_bucket", "--table-bucket", "partition_bucket", "--partition-bucket",
	"hot_read_units", "--hot-read-units", "hot_write_units", "--hot-write-units",
	"peak_read_units", "--peak-read-units", "peak_write_units", "--peak-write-units", "cold_after", "--cold-after",
	"default_ttl", "--default-ttl", "index_id", "--index-id", "event_id", "--event-id",
	"page_token", "--page-token",
)

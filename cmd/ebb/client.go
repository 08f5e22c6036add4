package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultServer is where the CLI looks for a server when neither --server
// nor EBB_SERVER says otherwise: the address `ebb serve` listens on by
// default.
const defaultServer = "http://127.0.0.1:7070"

// client is the CLI's connection to a running ebb server, shared by every
// command group that talks to one. The root command's persistent flags
// fill it in.
type client struct {
	// server and token hold the flag values; empty means "use the
	// environment", resolved when a request is made so that a token never
	// shows up as a default in --help.
	server, token string
	// ctx is cancelled by SIGINT/SIGTERM, so an interrupted command stops
	// waiting for the server at once.
	ctx  context.Context
	http *http.Client
}

// addFlags adds --server and --token to root, for every command.
func (c *client) addFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&c.server, "server", "", "URL of the ebb server (default $EBB_SERVER, else "+defaultServer+")")
	f.StringVar(&c.token, "token", "", "bearer token for a server with --auth-file (default $EBB_TOKEN)")
}

// apiError is an error answered by the server, decoded from its
// {"error": {"code", "message"}} body. Commands can match it with
// errors.As to react to a code.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
	if e.Code == "unauthenticated" {
		msg += "; pass a token with --token or EBB_TOKEN"
	}
	return msg
}

// baseURL returns the server's URL without a trailing slash.
func (c *client) baseURL() (string, error) {
	s := c.server
	if s == "" {
		s = os.Getenv("EBB_SERVER")
	}
	if s == "" {
		s = defaultServer
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT", s)
	}
	return strings.TrimRight(s, "/"), nil
}

func (c *client) bearer() string {
	if c.token != "" {
		return c.token
	}
	return os.Getenv("EBB_TOKEN")
}

// do sends one API request and decodes the JSON response into out (which
// may be nil to ignore it). path is everything after the server URL,
// already escaped, query included ("/v1/indexes/" + url.PathEscape(name)).
// A non-nil body is sent as JSON. A non-2xx answer is returned as an
// *apiError carrying the server's code and message.
func (c *client) do(method, path string, body, out any) error {
	base, err := c.baseURL()
	if err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return fmt.Errorf("request %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if tok := c.bearer(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := c.http
	if hc == nil {
		// A bound on a whole request keeps a wedged server from hanging a
		// script forever; the API's largest requests finish far sooner.
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s %s: interrupted", method, path)
		}
		return fmt.Errorf("cannot reach the ebb server at %s (start one with `ebb serve`, or point --server or EBB_SERVER at it): %w", base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeAPIError(resp.StatusCode, data)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

// decodeAPIError turns an error answer into an *apiError, falling back to
// the status and a prefix of the body when it is not the API's JSON (a
// proxy in between, or not an ebb server at all).
func decodeAPIError(status int, data []byte) error {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &body); err == nil && body.Error.Code != "" {
		return &apiError{Status: status, Code: body.Error.Code, Message: body.Error.Message}
	}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return &apiError{Status: status, Code: "http_" + fmt.Sprint(status), Message: text}
}

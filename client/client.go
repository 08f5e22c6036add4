package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// DefaultServer is where a Client with no Config.Server looks: the address
// `ebb serve` listens on by default.
const DefaultServer = "http://127.0.0.1:7070"

// Config configures a Client. The zero value talks to DefaultServer without
// a token.
type Config struct {
	// Server is the server's base URL, http:// or https://, with a path
	// prefix when a proxy serves the API under one
	// ("https://gw.example/ebb"). Empty: DefaultServer.
	Server string
	// Token is sent as "Authorization: Bearer <Token>" on every request.
	// Empty sends none, for a server without an auth file.
	Token string
	// HTTPClient sends the requests. Nil: a client of the Client's own,
	// with no overall timeout; each call's context bounds it.
	HTTPClient *http.Client
}

// Client talks to one ebb server. It is safe for concurrent use; its
// methods hold no state between calls.
type Client struct {
	base  string // the server URL without a trailing slash
	host  string // for error messages
	token string
	hc    *http.Client
}

// New returns a Client for cfg. It fails, wrapping ErrInvalidArgument, when
// cfg.Server is not an http or https URL with a host; it does not contact
// the server.
func New(cfg Config) (*Client, error) {
	s := cfg.Server
	if s == "" {
		s = DefaultServer
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: server URL %q: want http://HOST:PORT or https://HOST[:PORT][/PREFIX]", ErrInvalidArgument, s)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimRight(s, "/"), host: u.Host, token: cfg.Token, hc: hc}, nil
}

// Server returns the base URL requests go to.
func (c *Client) Server() string { return c.base }

// name is a path segment naming something (an index, a key...): escaped on
// the way out, and refused when empty, which would make "//" in the path.
type name struct{ what, value string }

// urlPath joins literal strings and escaped names into a request path.
func urlPath(parts ...any) (string, error) {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b.WriteString(p)
		case name:
			if p.value == "" {
				return "", fmt.Errorf("%w: empty %s", ErrInvalidArgument, p.what)
			}
			b.WriteString(escapeSegment(p.value))
		default:
			panic(fmt.Sprintf("client: urlPath part %T", p))
		}
	}
	return b.String(), nil
}

// escapeSegment escapes s as one path segment. Besides what
// url.PathEscape escapes ('/', '?', '#', '%', NUL...), a segment that is
// exactly "." or ".." is escaped as %2E and %2E%2E: clients and routers
// resolve literal dot segments, and the server refuses them.
func escapeSegment(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

// do sends one request and decodes a 2xx JSON answer into out (nil: the
// body is dropped). in, when not nil, is sent as the JSON body. It returns
// the status, so that a create can tell 201 from 200.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	resp, data, err := c.send(ctx, method, path, query, in)
	if err != nil {
		return 0, err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("client: %s %s: decode the answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// send sends one request and reads the whole answer. A non-2xx answer is
// returned as an *APIError.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, in any) (*http.Response, []byte, error) {
	resp, data, err := c.roundTrip(ctx, method, path, query, in)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, decodeError(resp, data)
	}
	return resp, data, nil
}

// roundTrip sends one request and reads the whole answer, whatever its
// status.
func (c *Client) roundTrip(ctx context.Context, method, path string, query url.Values, in any) (*http.Response, []byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, fmt.Errorf("client: %s %s: encode the request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range requestHeaders(ctx) {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the method and URL
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, nil, &noServerError{addr: c.host, err: err}
		}
		return nil, nil, fmt.Errorf("client: %s %s%s: %w", method, c.base, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %s %s: read the answer: %w", method, path, err)
	}
	return resp, data, nil
}

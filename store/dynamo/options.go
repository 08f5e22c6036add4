package dynamo

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// Options configures a Store. The zero value of each field is documented;
// DefaultOptions returns the values ebb serve uses.
type Options struct {
	// Endpoint is the DynamoDB API URL (for example http://127.0.0.1:8000
	// for a local emulator or a ScyllaDB Alternator node). Empty means AWS,
	// resolved from Region.
	Endpoint string
	// Region is the AWS region. Empty means the standard AWS configuration
	// (AWS_REGION, shared config); with a loopback Endpoint it defaults to
	// us-east-1.
	Region string
	// TablePrefix is prepended to every physical table name and stripped
	// again in Tables, so several ebb deployments (or tests) can share one
	// account or emulator without seeing each other's tables.
	TablePrefix string
	// Common holds the options every remote backend has (see
	// remote.Common). Here Timeout (10 s by default) bounds each data
	// operation including the SDK's retries; TableTimeout (5 minutes)
	// CreateTable waiting for ACTIVE, DropTable waiting for the table to
	// be gone, and SetCapacity; MaxAttempts (8) the attempts of one
	// request (the SDK's retryer) and the rounds of re-sending
	// BatchWriteItem's UnprocessedItems; MaxBackoff (2 s) the backoff
	// between them. TTLMargin (DefaultTTLMargin, one hour; see
	// docs/backends.md for the reasoning) is how far past a row's last
	// expiry its native TTL attribute lies.
	remote.Common
	// NoNativeTTL leaves native TTL off on the tables this Store creates
	// (and on its catalog), and Capabilities reports NativeTTL false. The
	// TTL attribute is still written, so a Store opened later without this
	// option turns the backstop on for existing rows too. It does not
	// switch off native TTL that is already on. Tests that drive expiry
	// with a clock far from the provider's set it; zero leaves the
	// backstop on.
	NoNativeTTL bool
	// Client, when set, is used as is (Endpoint, Region, MaxAttempts and
	// credentials are then the caller's business).
	Client *dynamodb.Client
}

// DefaultTTLMargin is the default Options.TTLMargin. An hour is far more
// than the clock skew of a working host (NTP keeps hosts within
// milliseconds; a virtual machine resumed from a pause lags until NTP steps
// its clock), and it costs nothing that matters: the expiry sweeper deletes
// expired rows within seconds, and the backstop, which only catches what
// the sweeper missed, runs within days on AWS and on a 24 h scan on
// Alternator anyway.
const DefaultTTLMargin = time.Hour

// DefaultOptions returns the options ebb serve starts from.
func DefaultOptions() Options {
	c := remote.DefaultCommon()
	c.MaxAttempts, c.MaxBackoff, c.TTLMargin = 8, 2*time.Second, DefaultTTLMargin
	return Options{Common: c}
}

// tablePrefixPattern is what DynamoDB allows in table names.
var tablePrefixPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,200}$`)

// Validate checks the options; errors wrap store.ErrInvalid.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "dynamo: %s", fmt.Sprintf(format, args...))
	}
	if !tablePrefixPattern.MatchString(o.TablePrefix) {
		return bad("table prefix %q must match %s", o.TablePrefix, tablePrefixPattern)
	}
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("endpoint %q is not an http(s) URL", o.Endpoint)
		}
	}
	return o.Common.Validate("dynamo")
}

// withDefaults fills zero values.
func (o Options) withDefaults() Options {
	o.Common = o.Common.WithDefaults(DefaultOptions().Common)
	return o
}

// isLoopback reports whether an endpoint URL names this machine.
func isLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newHTTPClient is the HTTP client a Store that builds its own SDK client
// starts from. It is the SDK's buildable client, so that the
// standard AWS configuration can still adjust it while it is loaded: a CA
// bundle (AWS_CA_BUNDLE, ca_bundle in the shared config) adds root
// certificates, and the proxy comes from HTTPS_PROXY / NO_PROXY.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) {
			d.Timeout = 5 * time.Second
			d.KeepAlive = 30 * time.Second
		}).
		WithTransportOptions(func(tr *http.Transport) {
			tr.Proxy = http.ProxyFromEnvironment
			// Up to remote.Parallelism requests per Write, from many goroutines.
			tr.MaxIdleConns = 100
			tr.MaxIdleConnsPerHost = 100
			tr.IdleConnTimeout = 90 * time.Second
			tr.TLSHandshakeTimeout = 10 * time.Second
			tr.ExpectContinueTimeout = time.Second
		})
}

// idleCloser is the part of the HTTP client the Store closes.
type idleCloser interface{ CloseIdleConnections() }

// errNoCredentials is the whole message for a credential chain that found
// nothing: the SDK's own error lists every provider it tried, which hides
// the one thing to do.
const errNoCredentials = "dynamo: no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run on a role"

// credentialsError reports credentials that could not be found. It prints
// one line and keeps the SDK's error in the chain for errors.As.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string   { return errNoCredentials }
func (e *credentialsError) Unwrap() []error { return []error{store.ErrInvalid, e.err} }

// newClient builds the SDK client from the standard AWS configuration
// (environment, shared config files), so that a CA bundle, a proxy and the
// like apply to every endpoint. A loopback endpoint (an emulator) gets static
// dummy credentials and, unless Region is set, us-east-1, so tests need no
// AWS configuration; anything else uses the standard credential chain,
// which is asked for credentials here so that a missing one fails Open with
// one clear line. It returns the HTTP client to close with the Store.
func newClient(ctx context.Context, o Options) (*dynamodb.Client, idleCloser, error) {
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = o.MaxAttempts
			so.MaxBackoff = o.MaxBackoff
			// The client-side retry quota would turn a long outage into
			// fast failures that persist after the service is back until
			// enough requests succeed; the per-operation Timeout already
			// bounds the work.
			so.RateLimiter = ratelimit.None
		})
	}
	loopback := o.Endpoint != "" && isLoopback(o.Endpoint)
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(retryer),
		config.WithHTTPClient(newHTTPClient()),
		config.WithLogger(sdkLogger{o.Logger}),
	}
	region := o.Region
	if region == "" && loopback {
		region = "us-east-1"
	}
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	if loopback {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("ebb", "ebb", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamo: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, nil, store.Errorf(store.ErrInvalid, "dynamo: no AWS region configured (set --dynamodb-region or AWS_REGION)")
	}
	// The configuration has applied what it had (a CA bundle) to the
	// buildable client's transport. The Store takes that transport into one
	// *http.Client of its own, which every copy of the SDK client shares
	// (the SDK would otherwise clone a transport per copy) and whose idle
	// connections Close can close. Like the SDK's, it follows no redirects.
	var closer idleCloser
	if b, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		hc := &http.Client{
			Transport: b.GetTransport(),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
		cfg.HTTPClient, closer = hc, hc
	}
	if !loopback {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("dynamo: load AWS credentials: %w", err)
			}
			return nil, nil, credentialsErr(cfg.Credentials, err)
		}
	}
	client := dynamodb.NewFromConfig(cfg, func(do *dynamodb.Options) {
		if o.Endpoint != "" {
			do.BaseEndpoint = aws.String(o.Endpoint)
		}
	})
	return client, closer, nil
}

// credentialsErr describes a failed credential lookup. When the default
// chain fell through to its last resort, the instance role, nothing was
// configured at all: that gets the one-line errNoCredentials. A configured
// source that failed (an expired SSO session, a bad profile) keeps the
// SDK's message, which names it.
func credentialsErr(p aws.CredentialsProvider, err error) error {
	if c, ok := p.(*aws.CredentialsCache); ok && c.IsCredentialsProvider(&ec2rolecreds.Provider{}) {
		return &credentialsError{err: err}
	}
	return store.Errorf(store.ErrInvalid, "dynamo: load AWS credentials: %w", err)
}

// sdkLogger sends the SDK's own log lines (warnings such as a response
// checksum mismatch) to the Store's logger instead of standard error.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "aws sdk: "+fmt.Sprintf(format, v...))
}

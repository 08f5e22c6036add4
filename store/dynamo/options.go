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
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/ebb-data/ebb/store"
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
	// Now is the clock for read-resolved expiry, default TTLs and the
	// capacity-switch history. Nil means time.Now.
	Now func() time.Time
	// Timeout bounds each data operation (Get, Query, Write, ...) including
	// the SDK's retries; past it the operation fails with
	// store.ErrUnavailable. Zero means 10 s.
	Timeout time.Duration
	// TableTimeout bounds table operations that wait for the service
	// (CreateTable waiting for ACTIVE, DropTable waiting for the table to be
	// gone, SetCapacity). Zero means 5 minutes.
	TableTimeout time.Duration
	// MaxAttempts bounds the attempts of one request (the SDK's retryer) and
	// the rounds of re-sending BatchWriteItem's UnprocessedItems. Zero means 8.
	MaxAttempts int
	// MaxBackoff caps the exponential backoff between attempts. Zero means 2 s.
	MaxBackoff time.Duration
	// Logger receives probe results and retries. Nil discards.
	Logger *slog.Logger
	// Client, when set, is used as is (Endpoint, Region, MaxAttempts and
	// credentials are then the caller's business).
	Client *dynamodb.Client
}

// DefaultOptions returns the options ebb serve starts from.
func DefaultOptions() Options {
	return Options{
		Timeout:      10 * time.Second,
		TableTimeout: 5 * time.Minute,
		MaxAttempts:  8,
		MaxBackoff:   2 * time.Second,
	}
}

// tablePrefixPattern is what DynamoDB allows in table names.
var tablePrefixPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,200}$`)

// Validate checks the options; errors wrap store.ErrInvalid.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: dynamo: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
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
	if o.Timeout < 0 || o.TableTimeout < 0 || o.MaxBackoff < 0 {
		return bad("negative timeout or backoff")
	}
	if o.MaxAttempts < 0 || o.MaxAttempts > 100 {
		return bad("max attempts %d outside 0..100", o.MaxAttempts)
	}
	return nil
}

// withDefaults fills zero values.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.TableTimeout == 0 {
		o.TableTimeout = d.TableTimeout
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = d.MaxAttempts
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = d.MaxBackoff
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
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

// newHTTPClient is the transport the Store owns (and closes) when it builds
// its own SDK client.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// newClient builds the SDK client. A loopback endpoint (an emulator) gets
// static dummy credentials, so no AWS configuration is needed for tests;
// anything else uses the standard AWS credential chain.
func newClient(ctx context.Context, o Options, httpClient *http.Client) (*dynamodb.Client, error) {
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
	if o.Endpoint != "" && isLoopback(o.Endpoint) {
		region := o.Region
		if region == "" {
			region = "us-east-1"
		}
		return dynamodb.New(dynamodb.Options{
			Region:       region,
			BaseEndpoint: aws.String(o.Endpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("ebb", "ebb", ""),
			Retryer:      retryer(),
			HTTPClient:   httpClient,
		}), nil
	}
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(retryer),
		config.WithHTTPClient(httpClient),
	}
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("%w: dynamo: no AWS region configured (set --dynamodb-region or AWS_REGION)", store.ErrInvalid)
	}
	return dynamodb.NewFromConfig(cfg, func(do *dynamodb.Options) {
		if o.Endpoint != "" {
			do.BaseEndpoint = aws.String(o.Endpoint)
		}
	}), nil
}

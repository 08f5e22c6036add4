package dynamo_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/storetest"
)

// These tests cover how the backend finds its AWS configuration: a custom
// CA bundle, missing credentials, and the caller's context during Open.

// isolateAWSEnv hides the machine's AWS configuration from the test: no
// credentials, profile, region or CA bundle from the environment, shared
// config files that do not exist, and no instance metadata service.
func isolateAWSEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CA_BUNDLE", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB",
	} {
		t.Setenv(k, "") // restores the value when the test ends
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// TestCABundle serves the DynamoDB API over TLS with a self-signed
// certificate (a reverse proxy in front of the endpoint under test). With
// AWS_CA_BUNDLE naming that certificate the Store opens and works through
// it; without, the TLS handshake fails. The bundle is applied by the SDK's
// configuration loader, which needs the SDK's buildable HTTP client.
func TestCABundle(t *testing.T) {
	target, err := url.Parse(dynamotest.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	isolateAWSEnv(t)
	var served atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	// The server would log the handshake refused below.
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	// Registered first, so it runs after the Store's cleanup, which needs it.
	t.Cleanup(ts.Close)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(bundle, cert, 0o600); err != nil {
		t.Fatal(err)
	}

	opts := func() dynamo.Options {
		o := dynamotest.Options(t, storetest.NewClock(epoch).Now)
		o.Endpoint = ts.URL
		o.MaxAttempts = 1
		o.TableTimeout = 30 * time.Second
		return o
	}

	// Without the bundle the self-signed certificate is refused.
	_, err = dynamo.Open(t.Context(), opts())
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("open over TLS without AWS_CA_BUNDLE: %v, want an unknown-authority error", err)
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("%d requests served although the handshake should fail", n)
	}

	t.Setenv("AWS_CA_BUNDLE", bundle)
	s := dynamotest.Open(t, opts())
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	m := upsert("a", 1, "x", time.Time{})
	if err := s.Write(ctx, "events", []store.Mutation{m}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "events", []any{"a"}, m.Clustering); err != nil {
		t.Fatalf("read back over TLS: %v", err)
	}
	if served.Load() == 0 {
		t.Fatal("no request went through the TLS endpoint")
	}
}

// TestNoCredentials opens a Store on a non-local endpoint with no AWS
// credentials anywhere: Open fails at once with one line that says what to
// set, wrapping store.ErrInvalid, instead of the SDK's list of every
// provider it tried. It does so with a CA bundle configured too, which
// once failed earlier: the configuration loader could not add the bundle
// to a plain *http.Client. The endpoint is never contacted; its name would
// not resolve anyway.
func TestNoCredentials(t *testing.T) {
	isolateAWSEnv(t)
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	o := dynamo.DefaultOptions()
	o.Endpoint = "https://dynamodb.ebb-test.invalid"
	o.Region = "us-east-1"
	for _, ca := range []string{"", bundle} {
		t.Setenv("AWS_CA_BUNDLE", ca)
		start := time.Now()
		_, err := dynamo.Open(t.Context(), o)
		if err == nil {
			t.Fatal("open without credentials succeeded")
		}
		const want = "dynamo: no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run on a role"
		if err.Error() != want {
			t.Fatalf("AWS_CA_BUNDLE=%q: error:\n%s\nwant the one line:\n%s", ca, err, want)
		}
		if !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("%v does not wrap store.ErrInvalid", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("open took %v to find no credentials", took)
		}
	}
}

// TestOpenHonoursContext opens a Store on an endpoint that accepts
// connections and never answers: Open returns as soon as the caller's
// context ends, long before its own timeouts (10 s per request, 5 min for
// the catalog), and says why.
func TestOpenHonoursContext(t *testing.T) {
	isolateAWSEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		held []net.Conn
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	})
	defer func() {
		l.Close()
		wg.Wait()
		for _, c := range held {
			c.Close()
		}
	}()
	o := dynamo.DefaultOptions()
	o.Endpoint = "http://" + l.Addr().String()

	cases := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 300*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, c := range cases {
		ctx, cancel := c.ctx()
		start := time.Now()
		_, err := dynamo.Open(ctx, o)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: open returned %v, want %v", c.name, err, c.want)
		}
		if took > 3*time.Second {
			t.Errorf("%s: open took %v after a context of 300 ms", c.name, took)
		}
	}
}

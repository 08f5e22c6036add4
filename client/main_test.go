package client_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/client"
	"github.com/ebb-data/ebb/server"
)

// TestMain checks for leaked goroutines and, when every test ran, that the
// tests exercised every operation docs/openapi.yaml describes.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		if missing := uncovered(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "no test called these operations of docs/openapi.yaml: %v\n", missing)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Tokens of the test server's auth file.
const (
	rootToken    = "root-token"    // admin
	eventsToken  = "events-token"  // index:events only
	metricsToken = "metrics-token" // metrics only
)

const authFile = `tokens:
  - token: ` + rootToken + `
    scopes: [admin]
  - token: ` + eventsToken + `
    scopes: ["index:events"]
  - token: ` + metricsToken + `
    scopes: [metrics]
`

// env is a real ebb server for one test: an ebb.DB on the embedded Pebble
// store in a temporary directory, with its background roles, served over
// HTTP with an auth file. Every answer it gives a client from env.client is
// checked against docs/openapi.yaml.
type env struct {
	url string
	srv *server.Server
	db  *ebb.DB
	rec *recorder
}

func newEnv(t *testing.T) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	db, err := ebb.Open(context.Background(), ebb.Options{Dir: t.TempDir(), Registerer: reg, SweepInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	auth, err := server.ParseAuth([]byte(authFile))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{DB: db, Registerer: reg, Gatherer: reg, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	rec := newRecorder(t, srv.Routes())
	return &env{url: ts.URL, srv: srv, db: db, rec: rec}
}

// client returns a Client with token whose every exchange the recorder
// checks against the spec.
func (e *env) client(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Server: e.url, Token: token, HTTPClient: &http.Client{Transport: e.rec}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
)

// apiServer serves the real API over a Pebble store, with auth, plus an
// echo route to check request bodies.
func apiServer(t *testing.T) string {
	t.Helper()
	st := testbackend.Pebble(t, nil)
	if err := st.CreateTable(context.Background(), store.MetaSpec); err != nil {
		t.Fatal(err)
	}
	auth, err := server.ParseAuth([]byte("tokens:\n  - token: root\n    scopes: [admin]\n  - token: narrow\n    scopes: [\"index:a\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	echo := func(s *server.Server) {
		s.Route("POST /v1/indexes/{name}/echo", server.ResourceFromPath(server.KindIndex, "name"), func(w http.ResponseWriter, r *http.Request) error {
			var v map[string]any
			if err := server.DecodeJSON(r, &v); err != nil {
				return err
			}
			v["name"] = r.PathValue("name")
			return server.WriteJSON(w, http.StatusOK, v)
		})
	}
	s, err := server.New(server.Options{Auth: auth, Features: []server.Feature{echo}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestClientDo(t *testing.T) {
	url := apiServer(t)
	c := &client{server: url + "/", token: "root", ctx: context.Background()}

	var tables struct {
		Tables []struct {
			Name string `json:"name"`
			Rows int64  `json:"rows"`
		} `json:"tables"`
	}
	if err := c.do("GET", "/v1/admin/tables", nil, &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables.Tables) != 1 || tables.Tables[0].Name != store.MetaTable {
		t.Fatalf("tables %+v", tables)
	}

	// Bodies go out as JSON; path segments are the caller's to escape.
	var echoed map[string]any
	if err := c.do("POST", "/v1/indexes/a%2Fb/echo", map[string]int{"n": 7}, &echoed); err != nil {
		t.Fatal(err)
	}
	if echoed["n"] != float64(7) || echoed["name"] != "a/b" {
		t.Fatalf("echoed %v", echoed)
	}

	// API errors come back typed, code and message intact.
	err := c.do("GET", "/v1/no/such/route", nil, nil)
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "not_found" || !strings.Contains(err.Error(), "no such route") {
		t.Fatalf("unknown route: %v", err)
	}
	err = c.do("POST", "/v1/indexes/a/echo", map[string]any{"n": make(chan int)}, nil)
	if err == nil || !strings.Contains(err.Error(), "encode request") {
		t.Fatalf("unencodable body: %v", err)
	}

	narrow := &client{server: url, token: "narrow"}
	if err := narrow.do("GET", "/v1/admin/tables", nil, nil); !errors.As(err, &ae) || ae.Code != "permission_denied" {
		t.Fatalf("narrow token: %v", err)
	}
	anon := &client{server: url}
	t.Setenv("EBB_TOKEN", "")
	if err := anon.do("GET", "/v1/admin/tables", nil, nil); !errors.As(err, &ae) || ae.Code != "unauthenticated" || !strings.Contains(err.Error(), "--token") {
		t.Fatalf("no token: %v", err)
	}
}

func TestClientEnvironment(t *testing.T) {
	url := apiServer(t)
	t.Setenv("EBB_SERVER", url)
	t.Setenv("EBB_TOKEN", "root")
	if err := (&client{}).do("GET", "/v1/admin/tables", nil, nil); err != nil {
		t.Fatalf("server and token from the environment: %v", err)
	}
	// Flags win over the environment.
	var ae *apiError
	if err := (&client{token: "narrow"}).do("GET", "/v1/admin/tables", nil, nil); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("--token over EBB_TOKEN: %v", err)
	}
}

func TestClientFailures(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = (&client{server: "http://" + addr}).do("GET", "/healthz", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the ebb server") {
		t.Fatalf("unreachable: %v", err)
	}
	for _, bad := range []string{"127.0.0.1:7070", "ftp://x", "http://"} {
		if err := (&client{server: bad}).do("GET", "/healthz", nil, nil); err == nil || !strings.Contains(err.Error(), "server URL") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// Something that is not an ebb server answers in plain text.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer plain.Close()
	var ae *apiError
	err = (&client{server: plain.URL}).do("GET", "/v1/admin/tables", nil, nil)
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Message != "bad gateway" {
		t.Fatalf("plain-text error: %v", err)
	}
}

func TestVersionCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 2 || lines[0] != "ebb dev" || !strings.HasPrefix(lines[1], "go go1.") {
		t.Fatalf("version printed %q", stdout.String())
	}
}

// TestVersionLdflags checks that the release build's -X flag sets the
// version.
func TestVersionLdflags(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ebb")
	if out, err := exec.Command(goTool, "build", "-ldflags", "-X main.version=v9.9.9", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "ebb v9.9.9\n") {
		t.Fatalf("version: %q, %v", out, err)
	}
}

func TestHelpListsFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"serve", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, flag := range []string{"--addr", "--data", "--backend", "--dynamodb-endpoint", "--dynamodb-region", "--cql-hosts",
		"--cql-keyspace", "--reconcile-interval", "--sweep-interval", "--auth-file", "--log-level", "--server", "--token"} {
		if !strings.Contains(stdout.String(), flag) {
			t.Errorf("serve --help lacks %s", flag)
		}
	}
	t.Setenv("EBB_TOKEN", "do-not-print-me")
	stdout.Reset()
	run([]string{"--help"}, &stdout, io.Discard)
	if strings.Contains(stdout.String(), "do-not-print-me") {
		t.Fatal("help printed the token from the environment")
	}
}

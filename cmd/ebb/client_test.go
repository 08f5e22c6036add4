package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/server"
)

// testAuthFile gives the full server a root token and one scoped to the
// index "a".
const testAuthFile = "tokens:\n  - token: root\n    scopes: [admin]\n  - token: narrow\n    scopes: [\"index:a\"]\n"

// fullServer serves the whole API, as `ebb serve` does: an ebb.DB on the
// embedded store in a temporary directory, with its background roles, and
// with the test auth file when auth is set.
func fullServer(t *testing.T, auth bool) string {
	t.Helper()
	return serveDir(t, t.TempDir(), auth)
}

// serveDir is fullServer on the data directory dir.
func serveDir(t *testing.T, dir string, auth bool) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	db, err := ebb.Open(context.Background(), ebb.Options{Dir: dir, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	opts := server.Options{DB: db, Registerer: reg, Gatherer: reg}
	if auth {
		if opts.Auth, err = server.ParseAuth([]byte(testAuthFile)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// cli runs the ebb command with args and returns its exit code and output.
func cli(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestServerAndToken(t *testing.T) {
	url := fullServer(t, true)
	t.Setenv("EBB_SERVER", "")
	t.Setenv("EBB_TOKEN", "")

	// --server and --token on any client command.
	if code, out, errOut := cli("--server", url+"/", "--token", "root", "admin", "tables"); code != 0 || !strings.Contains(out, "ebb_meta") {
		t.Fatalf("admin tables: exit %d, %q %q", code, out, errOut)
	}
	// Errors say what to do about them.
	if code, _, errOut := cli("--server", url, "admin", "tables"); code != 1 ||
		errOut != "ebb: missing Authorization: Bearer <token> header (unauthenticated, HTTP 401); pass a token with --token or $EBB_TOKEN\n" {
		t.Fatalf("no token: exit %d, %q", code, errOut)
	}
	if code, _, errOut := cli("--server", url, "--token", "narrow", "admin", "tables"); code != 1 || !strings.Contains(errOut, "(permission_denied, HTTP 403); use a token with a scope") {
		t.Fatalf("narrow token: exit %d, %q", code, errOut)
	}

	// The environment, when the flags say nothing; the flags win.
	t.Setenv("EBB_SERVER", url)
	t.Setenv("EBB_TOKEN", "root")
	if code, _, errOut := cli("index", "list"); code != 0 {
		t.Fatalf("server and token from the environment: exit %d, %q", code, errOut)
	}
	if code, _, errOut := cli("--token", "narrow", "index", "list"); code != 1 || !strings.Contains(errOut, "permission_denied") {
		t.Fatalf("--token over $EBB_TOKEN: exit %d, %q", code, errOut)
	}
}

func TestClientFailures(t *testing.T) {
	t.Setenv("EBB_SERVER", "")
	t.Setenv("EBB_TOKEN", "")
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, errOut := cli("--server", "http://"+addr, "index", "list")
	if want := "ebb: no server at " + addr + " — start one with `ebb serve`, or point --server or $EBB_SERVER at a running one\n"; code != 1 || errOut != want {
		t.Fatalf("unreachable: exit %d, %q\nwant %q", code, errOut, want)
	}
	for _, bad := range []string{"127.0.0.1:7070", "ftp://x", "http://"} {
		if code, _, errOut := cli("--server", bad, "index", "list"); code != 1 || !strings.Contains(errOut, "server URL") {
			t.Errorf("%q: exit %d, %q", bad, code, errOut)
		}
	}
	// Something that is not an ebb server answers in its own words.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer plain.Close()
	if code, _, errOut := cli("--server", plain.URL, "tables", "list"); code != 1 || !strings.Contains(errOut, "HTTP 502: bad gateway") {
		t.Fatalf("plain-text error: exit %d, %q", code, errOut)
	}
	// A route this server does not have.
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"no such route"}}`)
	}))
	defer old.Close()
	if code, _, errOut := cli("--server", old.URL, "tables", "list"); code != 1 || !strings.Contains(errOut, "is it an ebb server of this version") {
		t.Fatalf("missing route: exit %d, %q", code, errOut)
	}
}

func TestOutputFlag(t *testing.T) {
	url := fullServer(t, false)
	if code, out, _ := cli("--server", url, "index", "list", "-o", "json"); code != 0 || out != "{\n  \"indexes\": []\n}\n" {
		t.Fatalf("-o json: %d %q", code, out)
	}
	if code, out, _ := cli("--server", url, "index", "list", "--json"); code != 0 || out != "{\n  \"indexes\": []\n}\n" {
		t.Fatalf("--json: %d %q", code, out)
	}
	if code, _, errOut := cli("--server", url, "index", "list", "--output", "yaml"); code != 1 || !strings.Contains(errOut, `--output "yaml": want table or json`) {
		t.Fatalf("--output yaml: %d %q", code, errOut)
	}
	// Every command that reads has --output.
	for _, args := range [][]string{
		{"index", "list"}, {"index", "show"}, {"index", "plan"}, {"index", "apply"}, {"index", "query"},
		{"lists", "get"}, {"lists", "show-feature"}, {"lists", "count"},
		{"tables", "list"}, {"tables", "get"}, {"tables", "items"},
		{"admin", "tables"}, {"admin", "cluster"},
	} {
		cmd, _, err := newRootCmd(io.Discard, io.Discard).Find(args)
		if err != nil || cmd.Flags().Lookup("output") == nil || cmd.Flags().Lookup("json") == nil {
			t.Errorf("ebb %s has no --output and --json (%v)", strings.Join(args, " "), err)
		}
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "__start_ebb",
		"zsh":        "#compdef ebb",
		"fish":       "complete -c ebb",
		"powershell": "Register-ArgumentCompleter",
	} {
		code, out, errOut := cli("completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, %q, output lacks %q", shell, code, errOut, want)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		script := filepath.Join(t.TempDir(), "ebb.bash")
		_, out, _ := cli("completion", "bash")
		if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("bash -n on the completion script: %v\n%s", err, b)
		}
	}

	// Names complete from the server.
	url := fullServer(t, false)
	ok(t, url, "index", "create", "events", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "1h")
	ok(t, url, "tables", "create", "orders")
	for args, want := range map[string]string{
		"index show ":   "events",
		"index query ":  "events",
		"tables get ":   "orders",
		"tables items ": "orders",
	} {
		words := append([]string{"__complete", "--server", url}, strings.Fields(args)...)
		code, out, errOut := cli(append(words, "")...)
		if code != 0 || !strings.Contains(out, "\n"+want+"\n") && !strings.HasPrefix(out, want+"\n") || !strings.HasSuffix(out, ":4\n") {
			t.Errorf("complete %q: exit %d, %q %q", args, code, out, errOut)
		}
	}
	if code, out, _ := cli("__complete", "index", "query", "events", "--order", ""); code != 0 || !strings.HasPrefix(out, "asc\ndesc\n") {
		t.Errorf("complete --order: %q", out)
	}
}

func TestVersionCommand(t *testing.T) {
	code, stdout, stderr := cli("version")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) < 2 || lines[0] != "ebb dev" || !strings.HasPrefix(lines[1], "go go1.") {
		t.Fatalf("version printed %q", stdout)
	}
}

// TestVersionLdflags checks that the release build's -X flag sets the
// version: the process tests' binary is built with it.
func TestVersionLdflags(t *testing.T) {
	out, err := exec.Command(ebbBinary(t), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "ebb "+testVersion+"\n") {
		t.Fatalf("version: %q, %v", out, err)
	}
}

func TestHelpListsFlags(t *testing.T) {
	code, stdout, stderr := cli("serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, flag := range []string{"--addr", "--data", "--backend", "--dynamodb-endpoint", "--dynamodb-region", "--cql-hosts",
		"--cql-keyspace", "--reconcile-interval", "--sweep-interval", "--auth-file", "--log-level", "--server", "--token"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("serve --help lacks %s", flag)
		}
	}
	t.Setenv("EBB_TOKEN", "do-not-print-me")
	_, stdout, _ = cli("--help")
	if strings.Contains(stdout, "do-not-print-me") {
		t.Fatal("help printed the token from the environment")
	}
	for _, group := range []string{"index", "lists", "tables", "admin", "health", "backup", "restore", "bench", "completion"} {
		if !strings.Contains(stdout, "\n  "+group+" ") {
			t.Errorf("--help does not list %s:\n%s", group, stdout)
		}
	}
}

// ok runs the CLI against url and fails the test unless it exits 0.
func ok(t *testing.T, url string, args ...string) string {
	t.Helper()
	code, out, errOut := cli(append([]string{"--server", url}, args...)...)
	if code != 0 {
		t.Fatalf("ebb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// fails runs the CLI against url and fails the test unless it exits 1
// saying want.
func fails(t *testing.T, url, want string, args ...string) {
	t.Helper()
	code, _, errOut := cli(append([]string{"--server", url}, args...)...)
	if code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("ebb %s: exit %d, stderr %q; want a failure saying %q", strings.Join(args, " "), code, errOut, want)
	}
}

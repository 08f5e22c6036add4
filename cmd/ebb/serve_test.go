package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binDir holds the ebb binary the process tests run, built once.
var (
	binDir    string
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	if n := os.Getenv(nofileVar); n != "" {
		execWithNofile(n) // a helper process: it becomes the command it runs
	}
	dir, err := os.MkdirTemp("", "ebb-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testVersion is the version ebbBinary sets with the release build's -X
// flag, which TestVersionLdflags checks.
const testVersion = "v9.9.9"

// ebbBinary builds cmd/ebb once per test run, as the Makefile's build
// target does (with -ldflags "-X main.version=..."), so that the process
// tests exercise exactly what a user runs. One build serves every test:
// linking the binary costs seconds of CPU.
func ebbBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(binDir, "ebb")
		out, err := exec.Command(goTool, "build", "-ldflags", "-X main.version="+testVersion, "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a running `ebb serve`.
type proc struct {
	cmd    *exec.Cmd
	url    string
	line   string // the ready line
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var readyLine = regexp.MustCompile(`^ebb serving (http://\S+) \(backend (\S+), (.+)\)$`)

// startServe runs `ebb serve args...` and waits for its ready line.
func startServe(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProc(t, exec.Command(ebbBinary(t), append([]string{"serve"}, args...)...))
}

// startProc starts cmd, an `ebb serve`, and waits for its ready line.
func startProc(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	rest := make(chan struct{})
	go func() {
		defer close(rest)
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
			t.Errorf("more than one line on stdout: %q", sc.Text())
		}
	}()
	go func() {
		<-rest // Wait closes stdout: read it all first
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case line, ok := <-lines:
		m := readyLine.FindStringSubmatch(line)
		if !ok || m == nil {
			t.Fatalf("ready line %q does not match %s; stderr:\n%s", line, readyLine, p.stderr)
		}
		p.url, p.line = m[1], line
	case <-time.After(30 * time.Second):
		t.Fatalf("no ready line after 30 s; stderr:\n%s", p.stderr)
	}
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("still running after %v; stderr:\n%s", within, p.stderr)
		return -1
	}
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestServeLifecycle runs the binary as a user would: it serves health and
// metrics, a second server on the same data directory fails at once on the
// lock, and SIGTERM shuts the first down cleanly.
func TestServeLifecycle(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := startServe(t, "--addr", "127.0.0.1:0", "--hot-addr", "127.0.0.1:0", "--data", data)

	if status, body := get(t, p.url+"/healthz", ""); status != 200 || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %q", status, body)
	}
	// The hot listener serves the same API.
	hot := regexp.MustCompile(`; hot listener (http://\S+)\)$`).FindStringSubmatch(p.line)
	if hot == nil {
		t.Fatalf("ready line %q names no hot listener", p.line)
	}
	if status, body := get(t, hot[1]+"/healthz", ""); status != 200 || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("healthz on the hot listener: %d %q", status, body)
	}
	status, body := get(t, p.url+"/metrics", "")
	if status != 200 {
		t.Fatalf("metrics: %d", status)
	}
	for _, want := range []string{"\ngo_goroutines ", "\nprocess_cpu_seconds_total ", "\nebb_pebble_disk_usage_bytes ", `ebb_http_requests_total{code="200",route="GET /healthz"} 2` /* one per listener */, `ebb_build_info{backend="pebble"`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", strings.TrimSpace(want))
		}
	}
	// Ready once the shard manager has run: at once on the embedded
	// backend, whose lease is this process's.
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := get(t, p.url+"/readyz", "")
		if status == 200 && strings.Contains(body, `"ready"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz after 10s: %d %s", status, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, body = get(t, p.url+"/v1/admin/tables", "")
	var admin struct {
		Tables []struct{ Name string } `json:"tables"`
	}
	if err := json.Unmarshal([]byte(body), &admin); status != 200 || err != nil || !slices.ContainsFunc(admin.Tables, func(tb struct{ Name string }) bool { return tb.Name == "ebb_meta" }) {
		t.Fatalf("admin tables: %d %q (%v)", status, body, err)
	}

	// A second server on the same directory must fail at once, not hang.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, ebbBinary(t), "serve", "--addr", "127.0.0.1:0", "--data", data)
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	err := second.Run()
	if ctx.Err() != nil {
		t.Fatalf("second serve still running after 5 s: %s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("second serve: %v, want a non-zero exit; output:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "lock") || strings.Contains(out.String(), "panic") {
		t.Fatalf("second serve said %q, want a message about the lock", out.String())
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; stderr:\n%s", code, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "shutting down") {
		t.Errorf("no shutdown log line; stderr:\n%s", p.stderr)
	}
	if !strings.Contains(p.stderr.String(), `msg="stopped cleanly"`) {
		t.Errorf("no log line for the clean stop; stderr:\n%s", p.stderr)
	}
	// The lock is released: the directory opens again.
	again := startServe(t, "--addr", "127.0.0.1:0", "--data", data)
	if err := again.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := again.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGINT; stderr:\n%s", code, again.stderr)
	}
}

// TestServeRefusesOpenAddressWithoutAuth checks that a non-loopback address,
// main or hot, needs an auth file, and that the refusal touches no data.
func TestServeRefusesOpenAddressWithoutAuth(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "hot 0.0.0.0:0"} {
		args := []string{"serve", "--addr", addr, "--data", data}
		if hot, ok := strings.CutPrefix(addr, "hot "); ok {
			args = []string{"serve", "--addr", "127.0.0.1:0", "--hot-addr", hot, "--data", data}
		}
		cmd := exec.Command(ebbBinary(t), args...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%s: %v, want exit 1; output:\n%s", addr, err, out)
		}
		if !strings.Contains(string(out), "--auth-file") || strings.Count(string(out), "\n") != 1 {
			t.Errorf("%s: want one line naming --auth-file, got:\n%s", addr, out)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("data directory touched by a refused start: %v", err)
	}
}

// TestServeWithAuthFile checks that the auth file is enforced, and that it
// allows a non-loopback address.
func TestServeWithAuthFile(t *testing.T) {
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(authFile, []byte("tokens:\n  - token: s3cret\n    scopes: [admin]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, "--addr", "0.0.0.0:0", "--data", filepath.Join(dir, "data"), "--auth-file", authFile)
	url := strings.Replace(p.url, "0.0.0.0", "127.0.0.1", 1)
	if status, body := get(t, url+"/v1/admin/tables", ""); status != 401 || !strings.Contains(body, `"unauthenticated"`) {
		t.Fatalf("no token: %d %s", status, body)
	}
	if status, body := get(t, url+"/v1/admin/tables", "s3cret"); status != 200 {
		t.Fatalf("with token: %d %s", status, body)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr)
	}
}

// TestServeBadConfig checks that bad flags fail with a clear one-line
// message before anything is opened.
func TestServeBadConfig(t *testing.T) {
	dir := t.TempDir()
	badAuth := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badAuth, []byte("tokens:\n  - token: x\n    scopes: [root]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "dynamodb", "--dynamodb-endpoint", "ftp://127.0.0.1:1"}, "is not an http(s) URL"},
		{[]string{"--backend", "cql"}, "--backend cql needs --cql-hosts"},
		{[]string{"--backend", "cql", "--cql-hosts", "127.0.0.1:1", "--cql-consistency", "most"}, `--cql-consistency "most"`},
		// A flag of a backend not selected is refused, not ignored.
		{[]string{"--dynamodb-endpoint", "http://127.0.0.1:1"}, "--dynamodb-endpoint is a flag of the dynamodb backend, but the backend is pebble (the default): select it with --backend dynamodb"},
		{[]string{"--backend", "dynamodb", "--cql-hosts", "127.0.0.1:1"}, "--cql-hosts is a flag of the cql backend, but the backend is dynamodb"},
		{[]string{"--backend", "mysql"}, `unknown backend "mysql": want pebble, dynamodb or cql`},
		{[]string{"--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"--sweep-interval", "0s"}, "must be positive"},
		{[]string{"--max-writes", "0"}, "must be positive"},
		{[]string{"--max-response-bytes", "0"}, "--max-response-bytes must be positive"},
		{[]string{"--max-runnable", "-1"}, "--max-runnable -1 is negative"},
		{[]string{"--sweep-max-deletes-per-second", "-5"}, "--sweep-max-deletes-per-second -5 is negative"},
		{[]string{"--addr", "nonsense"}, `--addr "nonsense"`},
		{[]string{"--auth-file", badAuth}, "invalid auth file"},
		{[]string{"--auth-file", filepath.Join(dir, "missing.yaml")}, "read auth file"},
		{[]string{"extra-arg"}, "unknown command"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, c.args...)
		if code := run(args, &stdout, &stderr); code != 1 {
			t.Errorf("%v: exit %d, want 1", c.args, code)
		}
		if !strings.Contains(stderr.String(), c.want) || !strings.HasPrefix(stderr.String(), "ebb: ") {
			t.Errorf("%v: stderr %q, want it to mention %q", c.args, stderr.String(), c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: printed %q on stdout", c.args, stdout.String())
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("data directory touched by a refused start: %v", err)
	}
}

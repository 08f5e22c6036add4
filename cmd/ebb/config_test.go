package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeConfigFile runs `ebb serve --config FILE` as a user would: the
// file's settings apply, relative paths in it are relative to it, and a
// flag on the command line overrides the file.
func TestServeConfigFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "auth.yaml"), []byte("tokens:\n  - token: s3cret\n    scopes: [admin]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ebb.yaml")
	if err := os.WriteFile(cfg, []byte(`# ebb serve settings
addr: "nonsense"          # overridden on the command line
data: data                # relative to this file
auth-file: auth.yaml      # required by the non-loopback address
backend: pebble
log-level: warn
reconcile-interval: 1m
sweep-interval: 500ms
shutdown-timeout: 10s
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The working directory is not the file's: the paths must still
	// resolve next to the file.
	p := startServe(t, "--config", cfg, "--addr", "0.0.0.0:0")
	if m := readyLine.FindStringSubmatch(p.line); m == nil || m[3] != "data "+filepath.Join(dir, "data") {
		t.Fatalf("ready line %q: want the data directory next to the config file", p.line)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
		t.Fatalf("data directory next to the config file: %v", err)
	}
	url := strings.Replace(p.url, "0.0.0.0", "127.0.0.1", 1)
	if status, body := get(t, url+"/v1/admin/tables", ""); status != 401 {
		t.Fatalf("no token: %d %s, want 401: the config file's auth-file is not in force", status, body)
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

// TestServeConfigFileErrors checks that a config file that cannot be used
// stops `ebb serve` with one line naming the file and, where there is one,
// the offending key and its line, before anything is opened.
func TestServeConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cases := []struct {
		name, file string
		args       []string
		want       string
	}{
		{"unknown key", "addr: 127.0.0.1:0\nlisten_port: 7070\n", nil, `line 2: unknown key "listen_port"`},
		{"flag spelled with dashes", "--addr: 127.0.0.1:0\n", nil, `unknown key "--addr"`},
		{"client flag", "server: http://127.0.0.1:7070\n", nil, `unknown key "server"`},
		{"config in config", "config: other.yaml\n", nil, `unknown key "config"`},
		{"malformed", "addr: [127.0.0.1:0\n", nil, "yaml: line 1"},
		{"tab indentation", "addr: 127.0.0.1:0\n\tdata: x\n", nil, "yaml: line"},
		{"not a mapping", "- addr\n- data\n", nil, "want a mapping of flag names to values"},
		{"two documents", "addr: 127.0.0.1:0\n---\ndata: x\n", nil, "want one YAML document"},
		{"key given twice", "log-level: info\nlog-level: debug\n", nil, "line 2: log-level: given twice"},
		{"bad duration", "sweep-interval: 10\n", nil, `line 1: sweep-interval: time: missing unit in duration "10"`},
		{"bad bool", "cql-tls: maybe\n", nil, "cql-tls: "},
		{"list for a single value", "backend: [a, b]\n", nil, "backend: want a single value, not a list"},
		{"mapping value", "backend:\n  name: x\n", nil, "backend: want a single value or a list"},
		{"empty value", "backend:\n", nil, "backend: no value"},
		{"unknown backend", "log-level: info\nbackend: pebbel\n", nil, `line 2: backend: unknown backend "pebbel": want pebble, dynamodb or cql`},
		// A flag of a backend not selected would be ignored: refused,
		// pointing at its line.
		{"another backend's flag", "log-level: info\ncql-hosts: [127.0.0.1:1, 127.0.0.1:2]\n", nil,
			"line 2: cql-hosts is a flag of the cql backend, but the backend is pebble (the default): select it with --backend cql"},
		{"another backend's flag, backend in the file", "backend: cql\ncql-hosts: [127.0.0.1:1]\ndynamodb-region: eu-west-1\n", nil,
			"line 3: dynamodb-region is a flag of the dynamodb backend, but the backend is cql: select it with --backend dynamodb"},
		// An overridden key must still be well-formed.
		{"overridden but malformed", "addr: [a, b]\n", nil, "addr: want a single value, not a list"},
		// The file's values go through the same checks as flags.
		{"bad value checked by serve", "log-level: loud\n", nil, `--log-level "loud"`},
		// A list is taken for a list flag: cql-hosts is set, so the
		// consistency is what fails.
		{"list flag", "backend: cql\ncql-hosts: [127.0.0.1:1]\ncql-consistency: most\n", nil, `--cql-consistency "most"`},
		// The command line wins: its bad value is the one reported.
		{"command line overrides", "log-level: info\n", []string{"--log-level", "shout"}, `--log-level "shout"`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, "c"+string(rune('a'+i))+".yaml")
			if err := os.WriteFile(file, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--config", file}, c.args...)
			if code := run(args, &stdout, &stderr); code != 1 {
				t.Errorf("exit %d, want 1; stderr %q", code, stderr.String())
			}
			msg := stderr.String()
			if !strings.HasPrefix(msg, "ebb: ") || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr %q, want one line mentioning %q", msg, c.want)
			}
			if c.args == nil && !strings.Contains(msg, "--log-level") && !strings.Contains(msg, "--cql-consistency") && !strings.Contains(msg, file) {
				t.Errorf("stderr %q does not name the file %s", msg, file)
			}
			if stdout.Len() != 0 {
				t.Errorf("printed %q on stdout", stdout.String())
			}
		})
	}
	var stderr bytes.Buffer
	missing := filepath.Join(dir, "missing.yaml")
	if code := run([]string{"serve", "--config", missing}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), missing) {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("data directory touched by a refused start: %v", err)
	}
}

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nofileVar, set in a test binary's environment, makes it a helper process
// that lowers its open-file limit to the variable's value and executes its
// arguments: `ebb serve` started that way cannot raise the limit again.
const nofileVar = "EBB_TEST_RLIMIT_NOFILE"

// execWithNofile is the helper process: it never returns.
func execWithNofile(n string) {
	limit, err := strconv.ParseUint(n, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit})
	}
	if err == nil {
		env := make([]string, 0, len(os.Environ()))
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, nofileVar+"=") {
				env = append(env, kv)
			}
		}
		err = syscall.Exec(os.Args[1], os.Args[1:], env)
	}
	fmt.Fprintf(os.Stderr, "%s=%s: %v\n", nofileVar, n, err)
	os.Exit(2)
}

// startServeNofile runs `ebb serve args...` with at most nofile open files.
func startServeNofile(t *testing.T, nofile int, args ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{ebbBinary(t), "serve"}, args...)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", nofileVar, nofile))
	return startProc(t, cmd)
}

// sockets counts the sockets process pid has open: its listeners and the
// connections it has accepted.
func sockets(t *testing.T, pid int) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// TestServeSurvivesFDExhaustion runs `ebb serve --hot-addr` with a limit of
// 256 open files and opens twice that many idle connections to each
// listener in turn, as a client needing no token can: the process keeps
// running, holds no more connections than its cap (by default under the
// open-file limit), serves a connection it holds, and answers /healthz on
// both listeners once the connections close. With a cap above the limit
// (--max-conns) accepting fails with "too many open files", and the
// listeners back off and recover as well.
func TestServeSurvivesFDExhaustion(t *testing.T) {
	const nofile = 256
	for _, c := range []struct {
		name string
		args []string
		cap  int // the most connections a listener may hold; 0: none
	}{
		// A quarter of the files kept for the store, the rest shared by
		// the two listeners.
		{"default cap", nil, nofile * 3 / 4 / 2},
		// No cap below the limit: the accept loops meet EMFILE.
		{"cap above the limit", []string{"--max-conns", "100000"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startServeNofile(t, nofile, append([]string{"--addr", "127.0.0.1:0", "--hot-addr", "127.0.0.1:0",
				"--data", filepath.Join(t.TempDir(), "data")}, c.args...)...)
			hot := regexp.MustCompile(`; hot listener (http://\S+)\)$`).FindStringSubmatch(p.line)
			if hot == nil {
				t.Fatalf("ready line %q names no hot listener", p.line)
			}
			listeners := []struct{ name, url string }{{"hot", hot[1]}, {"main", p.url}}
			if c.cap > 0 {
				// The cap the server says it keeps is the one held.
				_, metrics := get(t, p.url+"/metrics", "")
				for _, l := range []string{"main", "hot"} {
					if want := fmt.Sprintf("ebb_http_connections_max{listener=%q} %d\n", l, c.cap); !strings.Contains(metrics, want) {
						t.Errorf("metrics lack %q", want)
					}
				}
			}
			pid := p.cmd.Process.Pid
			base := sockets(t, pid)
			for _, l := range listeners {
				held := holdConnections(t, p, l.name, l.url, 2*nofile, base)
				t.Logf("%s listener: %d connections held at a limit of %d open files", l.name, held, nofile)
				if c.cap > 0 && held > c.cap {
					t.Errorf("%s listener: %d connections held, over the cap of %d", l.name, held, c.cap)
				}
				for _, u := range listeners {
					healthz(t, p, u.url, 15*time.Second)
				}
			}
			if !strings.Contains(p.stderr.String(), "too many open files") && c.cap == 0 {
				t.Errorf("no accept error was logged, so the limit was never met; stderr:\n%s", p.stderr)
			}
		})
	}
}

// holdConnections opens n idle connections to the listener at url of
// process p, checks that p keeps running and still serves the first of
// them, closes them and returns how many the process held at most.
func holdConnections(t *testing.T, p *proc, name, url string, n, base int) int {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			select {
			case exit := <-p.done:
				p.done <- exit
				t.Fatalf("ebb serve exited (%v) with %d connections open to its %s listener; stderr:\n%s", exit, len(conns), name, p.stderr)
			case <-time.After(time.Second):
			}
			t.Fatalf("%s listener: dial after %d connections: %v", name, len(conns), err)
		}
		conns = append(conns, c)
	}
	// The process accepts what it can; wait until the count of its
	// sockets stays put for a second.
	held, since := 0, time.Now()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("ebb serve exited (%v) with %d connections open to its %s listener; stderr:\n%s", err, len(conns), name, p.stderr)
		default:
		}
		if s := sockets(t, p.cmd.Process.Pid) - base; s != held {
			held, since = s, time.Now()
		} else if time.Since(since) > time.Second {
			break
		}
	}
	// The first connection was accepted: it is served at the limit.
	if _, err := io.WriteString(conns[0], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatalf("%s listener: %v", name, err)
	}
	_ = conns[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	line := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(conns[0], line); err != nil || string(line) != "HTTP/1.1 200" {
		t.Errorf("%s listener: /healthz on a connection held at the limit: %q, %v", name, line, err)
	}
	return held
}

// healthz waits up to within for /healthz at url to answer 200 while
// process p keeps running.
func healthz(t *testing.T, p *proc, url string, within time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var last string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("ebb serve exited (%v); stderr:\n%s", err, p.stderr)
		default:
		}
		resp, err := client.Get(url + "/healthz")
		if err != nil {
			last = err.Error()
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == 200 {
			return
		}
		last = resp.Status
	}
	t.Fatalf("%s/healthz not answered within %v once the connections closed: %s", url, within, last)
}

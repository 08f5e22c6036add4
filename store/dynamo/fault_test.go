package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/storetest"
)

// privateDynalite is a dynalite process owned by one test, on its own port,
// keeping its data in dir so that it survives a restart.
type privateDynalite struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func dynaliteBin(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs("../../tools/dynalite/node_modules/.bin/dynalite")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("dynalite is not installed (%v): run the tests through scripts/with-dynalite.sh "+
			"(or `make test`), which installs it with npm ci in tools/dynalite", err)
	}
	return bin
}

func startPrivateDynalite(t *testing.T) *privateDynalite {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	d := &privateDynalite{t: t, port: port, dir: t.TempDir()}
	d.start()
	t.Cleanup(d.stop)
	return d
}

func (d *privateDynalite) endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", d.port) }

func (d *privateDynalite) start() {
	d.t.Helper()
	d.cmd = exec.Command(dynaliteBin(d.t), "--host", "127.0.0.1", "--port", strconv.Itoa(d.port),
		"--path", d.dir, "--createTableMs", "10", "--deleteTableMs", "10", "--updateTableMs", "10")
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("dynalite did not start on port %d: %v", d.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends the process abruptly, as a crash would.
func (d *privateDynalite) kill() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	d.cmd = nil
}

func (d *privateDynalite) stop() {
	if d.cmd != nil {
		_ = d.cmd.Process.Signal(syscall.SIGCONT)
	}
	d.kill()
}

// TestCapabilitiesOnDynalite checks what the probe finds on dynalite, which
// implements neither transactions, native TTL nor warm throughput.
func TestCapabilitiesOnDynalite(t *testing.T) {
	dynamotest.Require(t)
	d := startPrivateDynalite(t)
	o := dynamo.DefaultOptions()
	o.Endpoint = d.endpoint()
	s, err := dynamo.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := store.Capabilities{
		Backend:               "dynamodb",
		MaxRowBytes:           400*1024 - 4096,
		DeleteBatch:           25,
		SharedAcrossProcesses: true,
		Switches:              store.DynamoDBSwitches,
		Classes:               store.DynamoDBClasses,
	}
	if got := s.Capabilities(); got != want {
		t.Fatalf("capabilities on dynalite = %+v, want %+v", got, want)
	}
}

// TestEndpointDown kills dynalite under a Store: operations fail with
// store.ErrUnavailable within the configured timeout, and once dynalite is
// back on the same port the same Store carries on.
func TestEndpointDown(t *testing.T) {
	dynamotest.Require(t)
	d := startPrivateDynalite(t)
	const timeout = 1500 * time.Millisecond
	o := dynamo.DefaultOptions()
	o.Endpoint = d.endpoint()
	o.TablePrefix = "fault_"
	o.Timeout = timeout
	o.TableTimeout = timeout
	o.MaxAttempts = 4
	o.MaxBackoff = 100 * time.Millisecond
	o.Now = storetest.NewClock(epoch).Now
	s, err := dynamo.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	first := upsert("a", 1, "x", time.Time{})
	if err := s.Write(ctx, "events", []store.Mutation{first}); err != nil {
		t.Fatal(err)
	}

	ops := map[string]func() error{
		"write": func() error { return s.Write(ctx, "events", []store.Mutation{upsert("a", 2, "x", time.Time{})}) },
		"get": func() error {
			_, err := s.Get(ctx, "events", []any{"a"}, first.Clustering)
			return err
		},
		"query": func() error {
			_, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{"a"}, Limit: 10})
			return err
		},
		"tables": func() error {
			_, err := s.Tables(ctx, "")
			return err
		},
	}
	expectDown := func(state string) {
		t.Helper()
		for name, op := range ops {
			start := time.Now()
			err := op()
			took := time.Since(start)
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s with dynalite %s: %v, want ErrUnavailable", name, state, err)
			}
			if took > timeout+time.Second {
				t.Errorf("%s with dynalite %s took %v, configured timeout %v", name, state, took, timeout)
			}
		}
	}

	// Hung: the process accepts connections but never answers, so only
	// the timeout ends the wait.
	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	expectDown("hung")
	if err := d.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := ops["get"](); err != nil {
		t.Fatalf("after dynalite resumed: %v", err)
	}

	// Gone: connections are refused.
	d.kill()
	expectDown("killed")

	d.start()
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for waitCtx.Err() == nil {
		if err := ops["get"](); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for name, op := range ops {
		if err := op(); err != nil {
			t.Fatalf("%s after dynalite restarted: %v", name, err)
		}
	}
	page, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{"a"}, Limit: 10})
	if err != nil || len(page.Rows) < 2 {
		t.Fatalf("after restart: %d rows, %v", len(page.Rows), err)
	}
}

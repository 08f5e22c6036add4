package faultfs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/client"
	"github.com/ebb-data/ebb/internal/faultfs"
	"github.com/ebb-data/ebb/server"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// The fault tests run the server in a child process, this test binary
// started again with these variables set, because some disk faults end
// the process, as they must.
const (
	envDir     = "EBB_FAULT_TEST_DIR"
	envClass   = "EBB_FAULT_TEST_CLASS"
	envOp      = "EBB_FAULT_TEST_OP"
	envAtStart = "EBB_FAULT_TEST_AT_START"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envDir); dir != "" {
		os.Exit(serveChild(dir, faultfs.Class(os.Getenv(envClass)), faultfs.Op(os.Getenv(envOp)), os.Getenv(envAtStart) != ""))
	}
	goleak.VerifyTestMain(m)
}

// serveChild serves the real server on an embedded store in dir whose
// file system injects the fault class/op: on from the start when atStart,
// otherwise switched on by SIGUSR1 and off by SIGUSR2. It prints the URL
// on stdout once serving, logs on stderr, and returns the exit status.
func serveChild(dir string, class faultfs.Class, op faultfs.Op, atStart bool) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM)
	defer signal.Stop(sigs)
	fault := faultfs.NewFault(class, op)
	if atStart {
		fault.On()
	}
	// Small memtables flush (to sstables, with a MANIFEST edit) every few
	// hundred KiB; a small block cache sends reads to the disk. Faults of
	// the write-ahead log are run with larger memtables: Pebble panics
	// when it rotates a broken log, and a rotation must not fall in the
	// moment between the fault and the store's refusing writes.
	memtable := int64(256 << 10)
	if class == faultfs.WAL {
		memtable = 16 << 20
	}
	st, err := ebbpebble.Open(dir, ebbpebble.Options{
		FS: faultfs.Wrap(vfs.Default, fault), Logger: log, MemTableSize: memtable, CacheSize: 64 << 10, MinFreeBytes: -1,
	})
	if err != nil {
		log.Error("open failed", "err", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := ebb.Open(ctx, ebb.Options{Store: st, Logger: log})
	if err != nil {
		log.Error("open failed", "err", err)
		return 1
	}
	defer db.Close()
	srv, err := server.New(server.Options{DB: db, Logger: log})
	if err != nil {
		log.Error("server", "err", err)
		return 1
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				switch s {
				case syscall.SIGUSR1:
					fault.On()
					log.Info("fault on", "fault", fault.String())
				case syscall.SIGUSR2:
					fault.Off()
					log.Info("fault off", "fault", fault.String())
				default:
					cancel()
				}
			}
		}
	}()
	err = srv.ListenAndServe(ctx, "127.0.0.1:0", 5*time.Second, func(url string) { fmt.Println(url) })
	close(done)
	<-stopped
	if err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// child is a running serveChild.
type child struct {
	cmd    *exec.Cmd
	c      *client.Client
	stderr *lockedBuffer
	done   chan struct{}
	code   int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startChild starts a server on dir with the fault; it returns once the
// server serves, or, when the child exits first, with c.c nil.
func startChild(t *testing.T, dir string, class faultfs.Class, op faultfs.Op, atStart bool) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envDir+"="+dir, envClass+"="+string(class), envOp+"="+string(op))
	if atStart {
		cmd.Env = append(cmd.Env, envAtStart+"=1")
	}
	ch := &child{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = ch.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			urls <- sc.Text()
		}
		close(urls)
		for sc.Scan() {
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			ch.code = exit.ExitCode()
		}
		close(ch.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch.done
	})
	select {
	case url, ok := <-urls:
		if !ok {
			<-ch.done
			return ch
		}
		if ch.c, err = client.New(client.Config{Server: url}); err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("child not serving after 30 s; stderr:\n%s", ch.stderr)
	}
	return ch
}

// SIGUSR1 switches the fault on and SIGUSR2 off; signal returns once the
// child has logged the switch, so the next request meets the new state.
func (ch *child) signal(t *testing.T, s os.Signal) {
	t.Helper()
	msg := map[os.Signal]string{syscall.SIGUSR1: `msg="fault on"`, syscall.SIGUSR2: `msg="fault off"`}[s]
	before := strings.Count(ch.stderr.String(), msg)
	if err := ch.cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
	if msg == "" {
		return
	}
	waitFor(t, 10*time.Second, msg, func() bool { return strings.Count(ch.stderr.String(), msg) > before })
}

// kill SIGKILLs the child and waits for it.
func (ch *child) kill() {
	_ = ch.cmd.Process.Kill()
	<-ch.done
}

// exited reports whether the child has exited, waiting up to d.
func (ch *child) exited(d time.Duration) bool {
	select {
	case <-ch.done:
		return true
	case <-time.After(d):
		return false
	}
}

const table = "faults"

// writers puts items into the shared table from n goroutines until ctx
// ends or a put fails, and records which were acknowledged.
type writers struct {
	mu    sync.Mutex
	acked []string
	errs  []error
	wg    sync.WaitGroup
}

func startWriters(ctx context.Context, c *client.Client, n int, prefix string) *writers {
	w := &writers{}
	pad := strings.Repeat("x", 2048)
	for i := range n {
		w.wg.Go(func() {
			for j := 0; ctx.Err() == nil; j++ {
				key := fmt.Sprintf("%s-w%d-%06d", prefix, i, j)
				rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := c.PutTableItem(rctx, table, key, client.PutTableItem{Timestamp: time.Now(), Attributes: map[string]any{"key": key, "pad": pad}})
				cancel()
				w.mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						w.errs = append(w.errs, err)
					}
					w.mu.Unlock()
					return
				}
				w.acked = append(w.acked, key)
				w.mu.Unlock()
			}
		})
	}
	return w
}

func (w *writers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *writers) snapshot() ([]string, []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...), append([]error(nil), w.errs...)
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkAcked restarts a server on dir without a fault and reads back every
// acknowledged item.
func checkAcked(t *testing.T, dir string, acked []string) {
	t.Helper()
	ch := startChild(t, dir, "", "", false)
	if ch.c == nil {
		t.Fatalf("restart without the fault failed (exit %d):\n%s", ch.code, ch.stderr)
	}
	lost := 0
	for _, key := range acked {
		if _, err := ch.c.TableItem(t.Context(), table, key); err != nil {
			if lost++; lost <= 5 {
				t.Errorf("acknowledged item %s after restart: %v", key, err)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}
	t.Logf("restart serves all %d acknowledged writes", len(acked))
	ch.kill()
}

func apiStatus(err error) (int, string) {
	var e *client.APIError
	if errors.As(err, &e) {
		return e.Status, e.Code
	}
	return 0, ""
}

func readyStatus(ch *child) error { return ch.c.Ready(context.Background()) }

// TestDiskFaults runs the real server on an embedded store whose disk
// fails, for each class of file and kind of operation, under concurrent
// writers: what clients get, what the log says, whether the process goes
// on. Every case ends with a restart on the healed disk that must serve
// every acknowledged write.
func TestDiskFaults(t *testing.T) {
	cases := []struct {
		class faultfs.Class
		op    faultfs.Op
		// want is the process's behaviour: "refuse" (writes 503 until a
		// restart, reads go on, not ready), "retry" (writes 503 while the
		// fault lasts, back after it, no restart), "reads" (reads 503
		// while the fault lasts, writes go on), "exit" (the process exits
		// with ebbpebble.FatalExitCode), "open" (a server cannot start on
		// the faulty disk).
		want string
		log  string
	}{
		{faultfs.WAL, faultfs.Write, "refuse", "disk fault; refusing every write until the server restarts"},
		{faultfs.WAL, faultfs.Sync, "refuse", "disk fault; refusing every write until the server restarts"},
		{faultfs.WAL, faultfs.Read, "open", "open failed"},
		{faultfs.SSTable, faultfs.Write, "retry", "flushing a memtable to an sstable failed"},
		{faultfs.SSTable, faultfs.Sync, "retry", "flushing a memtable to an sstable failed"},
		{faultfs.SSTable, faultfs.Read, "reads", "read failed"},
		{faultfs.Manifest, faultfs.Write, "exit", "fatal disk error"},
		{faultfs.Manifest, faultfs.Sync, "exit", "fatal disk error"},
		{faultfs.Manifest, faultfs.Read, "open", "open failed"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_%s", c.class, c.op), func(t *testing.T) {
			dir := t.TempDir()
			ch := startChild(t, dir, c.class, c.op, false)
			if ch.c == nil {
				t.Fatalf("child did not start (exit %d):\n%s", ch.code, ch.stderr)
			}
			ctx := t.Context()
			if _, _, err := ch.c.CreateTable(ctx, table, client.TableConfig{}); err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			w := startWriters(wctx, ch.c, 4, "before")
			// Enough for several flushes of the 256 KiB memtables.
			waitFor(t, 20*time.Second, "400 writes acknowledged", func() bool { return w.count() >= 400 })
			switch c.want {
			case "refuse", "retry", "exit":
				ch.signal(t, syscall.SIGUSR1)
				deadline := time.Now().Add(20 * time.Second)
				for _, errs := w.snapshot(); len(errs) < 4; _, errs = w.snapshot() {
					if time.Now().After(deadline) {
						t.Fatalf("writers not all refused after 20 s (%d acknowledged); server log:\n%s", w.count(), tail(ch.stderr.String(), 4000))
					}
					time.Sleep(20 * time.Millisecond)
				}
				w.wg.Wait()
			case "reads", "open":
				stop()
				w.wg.Wait()
			}
			acked, errs := w.snapshot()
			t.Logf("%d writes acknowledged; first refusal: %v", len(acked), append(errs, nil)[0])
			defer func() {
				if t.Failed() {
					t.Logf("server log:\n%s", tail(ch.stderr.String(), 6000))
				}
			}()
			switch c.want {
			case "refuse", "retry":
				for _, err := range errs {
					if st, code := apiStatus(err); st != 503 || code != "unavailable" {
						t.Errorf("write during the fault: %v, want 503 unavailable", err)
					}
				}
				if err := readyStatus(ch); err == nil {
					t.Error("/readyz ready during the fault")
				}
				if _, err := ch.c.TableItem(ctx, table, acked[0]); err != nil {
					t.Errorf("read during the fault: %v", err)
				}
				ch.signal(t, syscall.SIGUSR2)
				if c.want == "retry" {
					// Pebble retries the flush; once it succeeds, writes
					// are back without a restart.
					waitFor(t, 10*time.Second, "writes back after the fault", func() bool {
						_, err := ch.c.PutTableItem(ctx, table, "after", client.PutTableItem{Timestamp: time.Now()})
						return err == nil
					})
					acked = append(acked, "after")
					if err := readyStatus(ch); err != nil {
						t.Errorf("/readyz after the fault: %v", err)
					}
				} else {
					// A write-ahead log fault is for good: still refused,
					// still not ready, with the fault gone.
					_, err := ch.c.PutTableItem(ctx, table, "after", client.PutTableItem{Timestamp: time.Now()})
					if st, _ := apiStatus(err); st != 503 {
						t.Errorf("write after the fault cleared, before a restart: %v, want 503", err)
					}
					if err := readyStatus(ch); err == nil {
						t.Error("/readyz ready after a write-ahead log fault, before a restart")
					}
				}
				if ch.exited(0) {
					t.Fatalf("process exited (%d)", ch.code)
				}
			case "exit":
				if !ch.exited(10 * time.Second) {
					t.Fatal("process still running after a MANIFEST fault")
				}
				if ch.code != ebbpebble.FatalExitCode {
					t.Errorf("exit code %d, want %d", ch.code, ebbpebble.FatalExitCode)
				}
			case "reads":
				ch.signal(t, syscall.SIGUSR1)
				var readErr error
				for _, key := range acked[:200] {
					if _, readErr = ch.c.TableItem(ctx, table, key); readErr != nil {
						break
					}
				}
				if st, code := apiStatus(readErr); st != 503 || code != "unavailable" {
					t.Errorf("read of a flushed item during the fault: %v, want 503 unavailable", readErr)
				}
				// A put reads the item first (shared tables guard their
				// writes), so it may fail too, with the same code.
				if _, err := ch.c.PutTableItem(ctx, table, "during", client.PutTableItem{Timestamp: time.Now()}); err == nil {
					acked = append(acked, "during")
				} else if st, code := apiStatus(err); st != 503 || code != "unavailable" {
					t.Errorf("write during a read fault: %v, want success or 503 unavailable", err)
				}
				if err := readyStatus(ch); err != nil {
					t.Errorf("/readyz during a read fault: %v", err)
				}
				ch.signal(t, syscall.SIGUSR2)
				if _, err := ch.c.TableItem(ctx, table, acked[0]); err != nil {
					t.Errorf("read after the fault: %v", err)
				}
			case "open":
				ch.kill()
				failed := startChild(t, dir, c.class, c.op, true)
				if failed.c != nil {
					t.Fatal("server started on a disk failing reads of its files")
				}
				if failed.code != 1 {
					t.Errorf("exit code %d, want 1", failed.code)
				}
				ch = failed
			}
			if !strings.Contains(ch.stderr.String(), c.log) {
				t.Errorf("log lacks %q:\n%s", c.log, tail(ch.stderr.String(), 3000))
			}
			ch.kill()
			checkAcked(t, dir, acked)
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

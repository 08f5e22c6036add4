package client_test

import (
	"bufio"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/ebb-data/ebb/client"
)

// TestAgainstEbbServe drives a real `ebb serve` process, built from this
// checkout and started on the embedded backend, through the client: what
// a user of the package does.
func TestAgainstEbbServe(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ebb")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/ebb").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	var url string
	select {
	case line := <-lines:
		m := regexp.MustCompile(`^ebb serving (http://\S+) `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("ready line %q", line)
		}
		url = m[1]
	case <-time.After(30 * time.Second):
		t.Fatal("no ready line from ebb serve after 30s")
	}

	ctx := t.Context()
	c, err := client.New(client.Config{Server: url})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := client.IndexConfig{TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 48 * time.Hour}
	if _, created, err := c.CreateIndex(ctx, "events", cfg); err != nil || !created {
		t.Fatalf("CreateIndex: created=%v %v", created, err)
	}
	cfg.PartitionBucket = 20 * time.Minute
	if idx, _, err := c.CreateIndex(ctx, "events", cfg); err != nil || len(idx.Layouts) != 2 || idx.Layouts[1].PartitionBucket != 20*time.Minute {
		t.Fatalf("CreateIndex with another partition bucket: %+v, %v; want a layout change", idx.Layouts, err)
	}
	cfg.PartitionBucket = 10 * time.Minute
	cfg.Retention = 24 * time.Hour
	if idx, _, err := c.CreateIndex(ctx, "events", cfg); err != nil || idx.Retention != 24*time.Hour || idx.HeldRetention != 48*time.Hour {
		t.Fatalf("CreateIndex with a shorter retention: %+v, %v; want it changed and 48h held", idx, err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var evs []client.Event
	for i := range 250 {
		evs = append(evs, client.Event{IndexID: "acct/1", EventID: string(rune('a'+i%26)) + string(rune('0'+i/26)), Timestamp: now.Add(-time.Duration(i) * time.Second), Payload: []byte{byte(i)}})
	}
	if n, err := c.WriteEvents(ctx, "events", evs); err != nil || n != 250 {
		t.Fatalf("WriteEvents: %d, %v", n, err)
	}
	// The iterator pages (100 by default) through all of them, oldest first.
	got, last := 0, time.Time{}
	for ev, err := range c.Events(ctx, "events", client.EventQuery{IndexID: "acct/1", From: now.Add(-time.Hour), To: now.Add(time.Second)}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Timestamp.Before(last) {
			t.Fatalf("event %s out of order", ev.EventID)
		}
		last = ev.Timestamp
		got++
	}
	if got != 250 {
		t.Fatalf("iterated %d events, want 250", got)
	}
	if _, err := c.WriteEvents(ctx, "missing", evs[:1]); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("write to a missing index: %v, want ErrNotFound", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("ebb serve exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ebb serve still running 30s after SIGTERM")
	}
	if err := c.Health(ctx); !errors.Is(err, client.ErrNoServer) {
		t.Fatalf("Health after shutdown: %v, want ErrNoServer", err)
	}
}

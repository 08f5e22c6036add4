package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ebbclient "github.com/ebb-data/ebb/client"
)

// TestCorruptSSTable flips one byte of an sstable, as a failing disk or a
// bad copy would, and runs the binary as an operator would: `ebb restore`
// must refuse a backup holding the damaged file, naming it, and write
// nothing; `ebb serve` on a data directory holding it must keep serving
// what is readable, answer 503 for what is not, report itself not ready
// and unhealthy, say how to recover, and do the same after a restart
// instead of exiting on every start.
func TestCorruptSSTable(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	const items = 300
	keys := make([]string, items)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%03d", i)
	}

	// Items written, then flushed to an sstable by the restart that
	// replays the write-ahead log.
	p := startServe(t, "--addr", "127.0.0.1:0", "--data", data)
	c, err := ebbclient.New(ebbclient.Config{Server: p.url})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, _, err := c.CreateTable(ctx, "notes", ebbclient.TableConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		noise := make([]byte, 384)
		rand.Read(noise)
		if _, err := c.PutTableItem(ctx, "notes", k, ebbclient.PutTableItem{Timestamp: time.Now(), Attributes: map[string]string{"v": base64.StdEncoding.EncodeToString(noise)}}); err != nil {
			t.Fatal(err)
		}
	}
	stop(t, p)
	p = startServe(t, "--addr", "127.0.0.1:0", "--data", data)
	backup := filepath.Join(dir, "backup")
	if out, err := exec.Command(ebbBinary(t), "backup", "--server", p.url, "--to", backup).CombinedOutput(); err != nil {
		t.Fatalf("ebb backup: %v\n%s", err, out)
	}
	stop(t, p)

	// One byte flipped in the middle of the largest sstable, in the
	// backup and in the data directory alike (they are hard links).
	sst := largest(t, backup, ".sst")
	b, err := os.ReadFile(sst)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	for _, path := range []string{sst, filepath.Join(data, filepath.Base(sst))} {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	restored := filepath.Join(dir, "restored")
	cmd := exec.Command(ebbBinary(t), "restore", "--from", backup, "--data", restored)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), filepath.Base(sst)) || !strings.Contains(stderr.String(), "checksum mismatch") {
		t.Fatalf("ebb restore of a backup with a corrupt sstable: %v, stderr %q; want a failure naming %s", err, stderr.String(), filepath.Base(sst))
	}
	if _, err := os.Stat(restored); err == nil {
		t.Fatal("a refused restore wrote the data directory")
	}

	for round := range 2 {
		p := startServe(t, "--addr", "127.0.0.1:0", "--data", data)
		codes := map[int]int{}
		for _, k := range keys {
			status, body := get(t, p.url+"/v1/tables/notes/items/"+k, "")
			codes[status]++
			if status != 200 && status != 503 {
				t.Fatalf("round %d: item %s: %d %s", round, k, status, body)
			}
		}
		if codes[503] == 0 || codes[200] == 0 {
			t.Fatalf("round %d: statuses %v over %d items; want the corrupt block's items 503 and the rest 200; stderr:\n%s", round, codes, items, p.stderr)
		}
		if status, body := get(t, p.url+"/readyz", ""); status != 503 || !strings.Contains(body, "corruption") {
			t.Errorf("round %d: /readyz after a corrupt block: %d %s", round, status, body)
		}
		if _, body := get(t, p.url+"/metrics", ""); !strings.Contains(body, "\nebb_pebble_storage_fault 1\n") {
			t.Errorf("round %d: ebb_pebble_storage_fault is not 1 after a corrupt block", round)
		}
		if status, _ := get(t, p.url+"/healthz", ""); status != 200 {
			t.Errorf("round %d: /healthz %d", round, status)
		}
		for _, want := range []string{"on-disk corruption in " + filepath.Base(sst), "ebb restore --from BACKUP"} {
			if !strings.Contains(p.stderr.String(), want) {
				t.Errorf("round %d: log lacks %q:\n%s", round, want, p.stderr)
			}
		}
		t.Logf("round %d: %d items served, %d answered 503", round, codes[200], codes[503])
		stop(t, p)
	}
}

// stop sends SIGTERM to p and checks that it exits cleanly.
func stop(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; stderr:\n%s", code, p.stderr)
	}
}

// largest returns the largest file in dir with the suffix.
func largest(t *testing.T, dir, suffix string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	var best string
	var size int64 = -1
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > size {
			best, size = path, info.Size()
		}
	}
	if best == "" {
		t.Fatalf("no %s file in %s", suffix, dir)
	}
	return best
}

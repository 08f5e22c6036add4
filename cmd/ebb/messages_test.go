package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestWriteFileBadTime checks that a bad time in `ebb index write --file`
// is named by its event's number counting from 1, in every form the file
// takes, with what a time should look like rather than Go's layout.
func TestWriteFileBadTime(t *testing.T) {
	dir := t.TempDir()
	good := `{"index_id":"a","event_id":"1","timestamp":"2026-11-22T10:00:00Z","payload":""}`
	bad := `{"index_id":"a","event_id":"2","timestamp":"2026-13-01","payload":""}`
	for name, body := range map[string]string{
		"lines.jsonl": good + "\n" + bad + "\n",
		"array.json":  "[" + good + "," + bad + "]",
		"body.json":   `{"events": [` + good + "," + bad + "]}",
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := cli("--server", "http://127.0.0.1:1", "index", "write", "ev", "--file", file)
		want := `event 2: timestamp "2026-13-01" is not an RFC 3339 time, such as 2026-11-22T10:00:00.123Z`
		if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "2006-01-02") {
			t.Errorf("%s: exit %d, %q; want %q", name, code, errOut, want)
		}
	}
}

// TestWriteFileProgressAndResume checks that `ebb index write --file`
// shows its progress on a terminal, and that a write failing after its
// first batch says which events were written and how to resume from the
// first that was not.
func TestWriteFileProgressAndResume(t *testing.T) {
	url := fullServer(t, false)
	ok(t, url, "index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "2h")
	old := writerIsTerminal
	writerIsTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { writerIsTerminal = old })

	now := time.Now().UTC()
	var b strings.Builder
	write := func(i int, ts time.Time) {
		line, _ := json.Marshal(map[string]string{"index_id": "a", "event_id": fmt.Sprint(i), "timestamp": ts.Format(time.RFC3339Nano), "payload": ""})
		b.Write(line)
		b.WriteByte('\n')
	}
	n := maxEventBatch + 5
	for i := range n {
		write(i, now)
	}
	file := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli("--server", url, "index", "write", "ev", "--file", file)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("written %d event(s)", n)) {
		t.Fatalf("write: exit %d, %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "writing events") || !strings.Contains(errOut, fmt.Sprint(n)) {
		t.Errorf("no progress on a terminal: %q", errOut)
	}

	// The second batch holds an event past the runway: the first batch is
	// written, and the message says where to resume.
	write(n, now.Add(100*24*time.Hour))
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = cli("--server", url, "index", "write", "ev", "--file", file)
	for _, want := range []string{
		fmt.Sprintf("events %d..%d of %d", maxEventBatch+1, n+1, n+1),
		fmt.Sprintf("events 1..%d were written. To resume, write the events from event %d on", maxEventBatch, maxEventBatch+1),
		fmt.Sprintf("tail -n +%d %s | ebb index write ev --file -", maxEventBatch+1, file),
	} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("failed second batch: exit %d, %q; want %q", code, errOut, want)
		}
	}
}

// TestRestoreMissingBackup checks that a backup directory that does not
// exist is said not to exist, with one "ebb: " prefix.
func TestRestoreMissingBackup(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, errOut := cli("restore", "--from", missing, "--data", filepath.Join(t.TempDir(), "data"))
	if code != 1 || !strings.Contains(errOut, "the backup "+missing+" does not exist") || strings.Contains(errOut, "ebb: ebb:") {
		t.Errorf("restore --from a missing directory: exit %d, %q", code, errOut)
	}
}

// TestHintsOnce checks that an error explained by a command is not
// explained again on its way out: one token hint, not two.
func TestHintsOnce(t *testing.T) {
	url := fullServer(t, true)
	t.Setenv("EBB_TOKEN", "")
	code, _, errOut := cli("cost", "--from", url)
	if code != 1 || strings.Count(errOut, "pass a token") != 1 {
		t.Errorf("cost --from without a token: exit %d, %q; want the token hint once", code, errOut)
	}
}

// TestHealthJSON checks `ebb health --output json`, as every read command
// takes it.
func TestHealthJSON(t *testing.T) {
	url := fullServer(t, false)
	var rep healthReport
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, errOut := cli("--server", url, "health", "-o", "json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("health -o json: exit %d, %q %q: %v", code, out, errOut, err)
		}
		if code == 0 && rep.Ready && rep.Serving && rep.Server == url {
			break
		}
		if code != 1 || rep.Ready || rep.Reason == "" || time.Now().After(deadline) {
			t.Fatalf("health -o json: exit %d, %+v", code, rep)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Nothing listening: not serving, with the reason, exit 1.
	code, out, _ := cli("--server", "http://127.0.0.1:1", "health", "-o", "json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.Serving || rep.Reason == "" {
		t.Errorf("health -o json of nothing: exit %d, %q, %v", code, out, err)
	}
}

// TestApplyDeferredSaysRunAgain checks that `ebb index apply` leaving
// deferred actions says to run it again. The server is a stand-in
// answering a plan with one action applied and one deferred.
func TestApplyDeferredSaysRunAgain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/indexes/ev/reconcile" {
			http.NotFound(w, r)
			return
		}
		applied := r.URL.Query().Get("dry_run") == "false"
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"applied": %t, "actions": [
			{"op": "create", "table": "ev_2", "reason": "runway"},
			{"op": "drop", "table": "ev_0", "reason": "deferred: at most 1 drops per run (expired)", "deferred": true}]}`, applied)
	}))
	t.Cleanup(srv.Close)
	code, out, errOut := cli("--server", srv.URL, "index", "apply", "ev", "--yes")
	if code != 0 || !strings.Contains(out, "1 deferred") ||
		!strings.Contains(errOut, "1 action(s) deferred; run `ebb index apply ev` again to apply them") {
		t.Errorf("apply with a deferred action: exit %d, %q %q", code, out, errOut)
	}
	// A plan, not applied, does not say to run apply again.
	if code, _, errOut := cli("--server", srv.URL, "index", "plan", "ev"); code != 0 || strings.Contains(errOut, "again") {
		t.Errorf("plan: exit %d, %q", code, errOut)
	}
}

// TestStopBackfillSaysWhatItDid checks that --stop-backfill prints what
// it did, here that there was nothing to stop.
func TestStopBackfillSaysWhatItDid(t *testing.T) {
	url := fullServer(t, false)
	ok(t, url, "index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "2h")
	ok(t, url, "index", "migrate", "ev", "--legacy-table", "ev_legacy")
	if out := ok(t, url, "index", "migrate", "ev", "--stop-backfill"); !strings.Contains(out, "ev: no backfill was running; nothing stopped") {
		t.Errorf("stop-backfill: %q", out)
	}
}

// TestIndexQueryTimesAligned checks that the times of `ebb index query`
// have one width, whole seconds or not, so that the columns line up.
func TestIndexQueryTimesAligned(t *testing.T) {
	url := fullServer(t, false)
	ok(t, url, "index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "2h")
	now := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	ok(t, url, "index", "write", "ev", "--index-id", "a", "--event-id", "e1", "--timestamp", now.Format(time.RFC3339), "--payload", "x")
	ok(t, url, "index", "write", "ev", "--index-id", "a", "--event-id", "e2", "--timestamp", now.Add(5*time.Millisecond).Format(time.RFC3339Nano), "--payload", "y")
	out := ok(t, url, "index", "query", "ev", "--index-id", "a")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("query printed %q", out)
	}
	col := strings.Index(lines[0], "EVENT_ID")
	for _, l := range lines[1:] {
		if strings.Index(l, "e") != col || !strings.HasPrefix(l, now.Format("2006-01-02T15:04:05")) {
			t.Errorf("query printed %q: the event ids do not line up under EVENT_ID", out)
		}
	}
	if !strings.Contains(lines[1], now.Format("2006-01-02T15:04:05")+".000Z") || !strings.Contains(lines[2], ".005Z") {
		t.Errorf("query printed %q, want times to the millisecond", out)
	}
}

// TestTablesDeleteWithoutKey checks that `ebb tables delete NAME`, its key
// forgotten, points at `ebb tables drop`.
func TestTablesDeleteWithoutKey(t *testing.T) {
	code, _, errOut := cli("tables", "delete", "orders")
	if code != 1 || !strings.Contains(errOut, "delete needs the item's KEY (ebb tables delete orders KEY); to delete the whole table, run ebb tables drop orders") {
		t.Errorf("tables delete without a key: exit %d, %q", code, errOut)
	}
}

// TestListFeatureCreatedAtMillis checks that a list feature's created_at
// is to the millisecond, as the docs say every stored time is.
func TestListFeatureCreatedAtMillis(t *testing.T) {
	url := fullServer(t, false)
	out := ok(t, url, "lists", "create-feature", "user", "stories", "_", "--ttl", "720h", "-o", "json")
	var f struct {
		CreatedAt string `json:"created_at"`
	}
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	ts, err := time.Parse(time.RFC3339Nano, f.CreatedAt)
	if err != nil || ts.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("created_at %q: want milliseconds at most (%v)", f.CreatedAt, err)
	}
}

// TestDynamoDBUnreachable checks that opening the DynamoDB backend at an
// endpoint where nothing listens logs that it connects and retries, and
// fails with one line naming the endpoint and the cause.
func TestDynamoDBUnreachable(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	old := connectingNotice
	connectingNotice = 200 * time.Millisecond
	t.Cleanup(func() { connectingNotice = old })
	// A free loopback port with nothing listening on it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _, err = backendOptions(ctx, serveConfig{backend: "dynamodb", dynamoEndpoint: endpoint}, log, prometheus.NewRegistry())
	if err == nil {
		t.Fatal("opened DynamoDB where nothing listens")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "DynamoDB at endpoint "+endpoint+" unreachable") || !strings.Contains(msg, "connection refused") {
		t.Errorf("error %q: want one line naming the endpoint and the cause", msg)
	}
	for _, want := range []string{`msg="connecting to DynamoDB" at="endpoint ` + endpoint, `msg="DynamoDB has not answered yet; retrying"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// TestServeBindsBeforeOpening checks that `ebb serve` holds its port
// before it opens its store: while the store opens (a DynamoDB endpoint
// where nothing listens, which it retries for seconds) the port is taken,
// a second server on it fails at once, and a signal stops the start.
func TestServeBindsBeforeOpening(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	addr, nothing := free(), free()
	env := append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
	cmd := exec.Command(ebbBinary(t), "serve", "--addr", addr, "--backend", "dynamodb", "--dynamodb-endpoint", "http://"+nothing)
	cmd.Env = env
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	// The store is being opened once it says it connects.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "connecting to DynamoDB") {
		if time.Now().After(deadline) {
			t.Fatalf("no connecting line after 20 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		t.Errorf("port %s not held while the store opens: %v", addr, err)
	} else {
		_ = c.Close()
	}
	second := exec.Command(ebbBinary(t), "serve", "--addr", addr, "--data", filepath.Join(t.TempDir(), "data"))
	if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "listen on "+addr) {
		t.Errorf("a second server on the port: %v, %s", err, out)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		done <- nil // for the deferred wait
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after SIGTERM while opening:\n%s", stderr.String())
	}
}

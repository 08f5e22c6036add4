package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestIndexErase erases a range shard by shard, printing each shard's
// count on standard error, then one event, and refuses flags that do not
// name a range or one event before asking anything.
func TestIndexErase(t *testing.T) {
	url := fullServer(t, false)
	ok(t, url, "index", "create", "er", "--table-bucket", "1h", "--partition-bucket", "10m", "--retention", "24h")
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, id := range []string{"e1", "e2", "e3", "e4"} {
		ok(t, url, "index", "write", "er", "--index-id", "acct_1", "--event-id", id, "--timestamp", now.Add(-time.Duration(i)*50*time.Minute).Format(time.RFC3339Nano))
	}
	ok(t, url, "index", "write", "er", "--index-id", "acct_2", "--event-id", "e1", "--timestamp", now.Format(time.RFC3339Nano))
	notAtTerminal(t)

	for _, c := range []struct {
		want string
		args []string
	}{
		{"--timestamp and --event-id go together", []string{"--event-id", "e1"}},
		{"--timestamp and --event-id go together", []string{"--timestamp", "now"}},
		{"leave out --from and --to", []string{"--event-id", "e1", "--timestamp", "now", "--from=-1h"}},
		{"--from", []string{"--from", "yesterday"}},
	} {
		fails(t, url, c.want, append([]string{"index", "erase", "er", "--index-id", "acct_1", "--yes"}, c.args...)...)
	}
	fails(t, url, "index-id", "index", "erase", "er", "--yes")
	fails(t, url, "not found", "index", "erase", "nope", "--index-id", "acct_1", "--yes")

	// A range of the last two hours: e1..e3 (0, 50 and 100 minutes ago).
	code, out, errOut := cli("--server", url, "index", "erase", "er", "--index-id", "acct_1", "--from=-2h", "--to", now.Add(time.Millisecond).Format(time.RFC3339Nano), "--yes")
	if code != 0 || !strings.Contains(out, "3 event(s)") {
		t.Fatalf("range erase: exit %d, %q, %q", code, out, errOut)
	}
	if lines := strings.Count(errOut, "removed"); lines < 2 || lines > 3 || !strings.Contains(errOut, "(3 in all)") {
		t.Fatalf("progress on stderr: %q", errOut)
	}
	if got := ok(t, url, "index", "query", "er", "--index-id", "acct_1"); strings.Contains(got, "e1") || !strings.Contains(got, "e4") {
		t.Fatalf("after the range erase: %q", got)
	}

	// One event, as JSON; then again, nothing more.
	one := []string{"index", "erase", "er", "--index-id", "acct_1", "--event-id", "e4", "--timestamp", now.Add(-150 * time.Minute).Format(time.RFC3339Nano), "--yes", "-o", "json"}
	for _, want := range []int64{1, 0} {
		var res struct{ Removed int64 }
		if err := json.Unmarshal([]byte(ok(t, url, one...)), &res); err != nil || res.Removed != want {
			t.Fatalf("erase one: %+v %v, want %d removed", res, err, want)
		}
	}
	if got := ok(t, url, "index", "query", "er", "--index-id", "acct_2"); !strings.Contains(got, "e1") {
		t.Fatalf("acct_2 lost its event: %q", got)
	}
}

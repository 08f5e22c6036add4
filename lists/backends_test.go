package lists_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// factory opens a fresh, empty Store reading the given clock.
type factory func(t testing.TB, now func() time.Time) store.Store

func pebbleStore(t testing.TB, now func() time.Time) store.Store {
	st, err := ebbpebble.Open("db", ebbpebble.Options{Now: now, FS: vfs.NewMem(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// dynamoStore opens the DynamoDB backend on EBB_DYNAMODB_ENDPOINT (dynalite
// under scripts/with-dynalite.sh) with a table prefix of its own, so tests
// never see each other's tables. It fails, never skips, without an
// endpoint: a missing emulator must not pass for a green run.
func dynamoStore(t testing.TB, now func() time.Time) store.Store {
	endpoint := os.Getenv("EBB_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		t.Fatal("EBB_DYNAMODB_ENDPOINT is not set; run the lists tests with scripts/with-dynalite.sh go test -race ./lists/")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := dynamo.Open(ctx, dynamo.Options{
		Endpoint: endpoint, Region: "us-east-1", TablePrefix: "lists_" + hex.EncodeToString(b[:]) + ".", Now: now,
	})
	if err != nil {
		t.Fatalf("open dynamodb at %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// clock is a manually driven clock shared by a Store and a Service.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(t time.Time) *clock { return &clock{now: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one Store with a Service on it.
type env struct {
	st    store.Store
	svc   *lists.Service
	clock *clock
}

// start is a fixed, sub-millisecond-precise instant, so that expiry
// boundaries off the millisecond grid are exercised.
var start = time.Date(2026, 11, 22, 10, 0, 0, 123_456_789, time.UTC)

func newEnv(t testing.TB, f factory) *env {
	c := newClock(start)
	st := f(t, c.Now)
	svc, err := lists.New(context.Background(), st, lists.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, svc: svc, clock: c}
}

func TestPebble(t *testing.T) { runSuite(t, pebbleStore) }

func TestDynamo(t *testing.T) { runSuite(t, dynamoStore) }

package lists_test

import (
	"context"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// env is one Store with a Service on it.
type env struct {
	st    store.Store
	svc   *lists.Service
	clock *storetest.Clock
}

// start is a fixed, sub-millisecond-precise instant, so that expiry
// boundaries off the millisecond grid are exercised.
var start = time.Date(2026, 11, 22, 10, 0, 0, 123_456_789, time.UTC)

func newEnv(t testing.TB, f testbackend.Factory) *env {
	c := storetest.NewClock(start)
	st := f(t, c.Now)
	svc, err := lists.New(context.Background(), st, lists.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, svc: svc, clock: c}
}

// TestPebble, TestDynamo, TestDynamoDBLocal and TestCQL run in parallel:
// each remote variant waits on a server of its own, so their round trips
// overlap instead of adding up, and the embedded one's CPU fills their
// waits instead of coming before them.
func TestPebble(t *testing.T) { t.Parallel(); runSuite(t, testbackend.Pebble, false) }

func TestDynamo(t *testing.T) { t.Parallel(); runSuite(t, testbackend.Dynamo, false) }

func TestDynamoDBLocal(t *testing.T) { t.Parallel(); runSuite(t, testbackend.DynamoDBLocal, false) }

func TestCQL(t *testing.T) { t.Parallel(); runSuite(t, testbackend.CQL, true) }

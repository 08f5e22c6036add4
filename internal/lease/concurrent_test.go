package lease

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// TestRenewAlongsideFences: the renewer and the fences of a running pass
// both write the lease document; neither may take the other's write for a
// takeover. A holder that fenced itself out would stop its own shard
// manager, with no other process to take over.
func TestRenewAlongsideFences(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "exclusive", true: "shared"}[shared]
		t.Run(name, func(t *testing.T) {
			st := testbackend.Pebble(t, nil)
			l, err := New(Options{Store: st, Role: "manager", Holder: "me", Duration: 15 * time.Second, Exclusive: !shared})
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := l.Acquire(t.Context()); !ok || err != nil {
				t.Fatalf("first Acquire: %v, %v", ok, err)
			}
			const rounds = 300
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []string
			note := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				if len(failures) < 5 {
					failures = append(failures, s)
				}
			}
			wg.Go(func() {
				for range rounds {
					if ok, err := l.Acquire(t.Context()); !ok || err != nil {
						note("renewal lost the lease: " + errString(err))
					}
				}
			})
			for range 2 {
				wg.Go(func() {
					for range rounds {
						if err := l.Fence(t.Context()); err != nil {
							note("fence: " + err.Error())
						}
					}
				})
			}
			wg.Wait()
			if len(failures) > 0 {
				t.Fatalf("the only holder lost its own lease:\n%v", failures)
			}
			if st := l.Status(); !st.Held || st.Record.Epoch != 1 {
				t.Fatalf("status after the rounds %+v, want held at epoch 1", st)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// lostAnswerStore applies a write and then, when armed, reports it as
// timed out: a renewal whose outcome the holder did not learn.
type lostAnswerStore struct {
	store.Store
	armed atomic.Bool
}

func (s *lostAnswerStore) Write(ctx context.Context, table string, batch []store.Mutation) error {
	err := s.Store.Write(ctx, table, batch)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		return context.DeadlineExceeded
	}
	return err
}

// TestRenewalOfUnknownOutcome: a renewal that landed although its answer
// was lost leaves a document with this holder's name and epoch. The next
// fence and the next renewal must recognise it as this process's own, not
// as a takeover: on a shared backend the holder would otherwise wait out
// its own lease, with no manager meanwhile.
func TestRenewalOfUnknownOutcome(t *testing.T) {
	st := &lostAnswerStore{Store: testbackend.Pebble(t, nil)}
	l, err := New(Options{Store: st, Role: "manager", Holder: "me", Duration: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("first Acquire: %v, %v", ok, err)
	}
	st.armed.Store(true)
	if ok, err := l.Acquire(t.Context()); !ok || err == nil {
		t.Fatalf("a renewal whose answer was lost: held %v, err %v; want still held, with the error", ok, err)
	}
	if err := l.Fence(t.Context()); err != nil {
		t.Fatalf("fence after a renewal of unknown outcome: %v", err)
	}
	st.armed.Store(true)
	_ = l.Fence(t.Context())
	if ok, err := l.Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("renewal after a fence of unknown outcome: %v, %v", ok, err)
	}
	if s := l.Status(); !s.Held || s.Record.Epoch != 1 {
		t.Fatalf("status %+v, want held at epoch 1", s)
	}
}

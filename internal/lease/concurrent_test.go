package lease

import (
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
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

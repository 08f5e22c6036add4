package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// countingStore counts the calls a lease makes.
type countingStore struct {
	store.Store
	creates, writes, gets atomic.Int64
}

func (s *countingStore) CreateTable(ctx context.Context, spec store.TableSpec) error {
	s.creates.Add(1)
	return s.Store.CreateTable(ctx, spec)
}

func (s *countingStore) Write(ctx context.Context, table string, batch []store.Mutation) error {
	s.writes.Add(1)
	return s.Store.Write(ctx, table, batch)
}

func (s *countingStore) Get(ctx context.Context, table string, p, c []any) (store.Row, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, table, p, c)
}

// TestRenewalIsOneWrite: the first Acquire creates the metadata table and
// reads the document; every renewal after it, while held, is one
// conditional write with no read and no table creation, so that an idle
// holder's only cost is its renewals. A takeover meanwhile is still seen.
func TestRenewalIsOneWrite(t *testing.T) {
	st := &countingStore{Store: testbackend.Pebble(t, nil)}
	l, err := New(Options{Store: st, Role: "sweeper", Holder: "me", Duration: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("first Acquire: %v, %v", ok, err)
	}
	if st.creates.Load() != 1 || st.gets.Load() != 1 || st.writes.Load() != 1 {
		t.Fatalf("first Acquire: %d creates, %d gets, %d writes; want one of each", st.creates.Load(), st.gets.Load(), st.writes.Load())
	}
	for range 10 {
		if ok, err := l.Acquire(t.Context()); !ok || err != nil {
			t.Fatalf("renewal: %v, %v", ok, err)
		}
	}
	if st.creates.Load() != 1 || st.gets.Load() != 1 || st.writes.Load() != 11 {
		t.Fatalf("ten renewals: %d creates, %d gets, %d writes in all; want 1, 1 and 11", st.creates.Load(), st.gets.Load(), st.writes.Load())
	}
	// Another holder takes the lease (as on an exclusive backend, at once).
	other, err := New(Options{Store: st.Store, Role: "sweeper", Holder: "other", Duration: 15 * time.Second, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := other.Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("takeover: %v, %v", ok, err)
	}
	if ok, err := l.Acquire(t.Context()); ok || err != nil {
		t.Fatalf("renewal after a takeover: held %v, err %v; want not held", ok, err)
	}
	if l.Held() {
		t.Fatal("Held after a takeover")
	}
}

package store_test

import (
	"context"
	"testing"

	"github.com/ebb-data/ebb/store"
)

// backend is a Store that declares Checkpointer and DeferredWriter; its
// other methods are never called here.
type backend struct{ store.Store }

func (backend) Checkpoint(context.Context, string) (int64, error) { return 0, nil }
func (backend) WriteDeferred(context.Context, string, []store.Mutation) error {
	return nil
}

// seeing is a wrapper that declares DeferredWriter, as a wrapper that must
// see every write does; plain declares nothing.
type seeing struct{ inner store.Store }
type plain struct{ inner store.Store }

func (w seeing) Unwrap() store.Store { return w.inner }
func (seeing) WriteDeferred(context.Context, string, []store.Mutation) error {
	return nil
}
func (w plain) Unwrap() store.Store { return w.inner }

// The wrappers are Stores by embedding, so that a chain can be built.
type seeingStore struct {
	store.Store
	seeing
}
type plainStore struct {
	store.Store
	plain
}

func (s seeingStore) Unwrap() store.Store { return s.seeing.Unwrap() }
func (s plainStore) Unwrap() store.Store  { return s.plain.Unwrap() }

func TestAsWalksTheChain(t *testing.T) {
	b := backend{}
	inner := plainStore{plain: plain{inner: b}}
	outer := seeingStore{seeing: seeing{inner: inner}}

	// The first store of the chain declaring the interface wins: the
	// wrapper that must see writes, never the backend below it.
	dw, ok := store.As[store.DeferredWriter](outer)
	if !ok {
		t.Fatal("As found no DeferredWriter")
	}
	if _, isWrapper := dw.(seeingStore); !isWrapper {
		t.Fatalf("As[DeferredWriter] = %T, want the outer wrapper", dw)
	}
	// An interface no wrapper declares is found on the backend.
	cp, ok := store.As[store.Checkpointer](outer)
	if !ok {
		t.Fatal("As found no Checkpointer through two wrappers")
	}
	if _, isBackend := cp.(backend); !isBackend {
		t.Fatalf("As[Checkpointer] = %T, want the backend", cp)
	}
	// A concrete type anywhere in the chain is found.
	if _, ok := store.As[plainStore](outer); !ok {
		t.Fatal("As found no plainStore in the chain")
	}
	// One nobody implements is not.
	if _, ok := store.As[store.HealthReporter](outer); ok {
		t.Fatal("As found a HealthReporter nobody declares")
	}
	if _, ok := store.As[store.HealthReporter](nil); ok {
		t.Fatal("As found a HealthReporter in a nil store")
	}
}

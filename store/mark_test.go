package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ebb-data/ebb/store"
)

// TestMark: a marked error matches its kind and everything it matched
// before, and says only its own text.
func TestMark(t *testing.T) {
	errFeature := store.Mark(errors.New("feature: no such thing"), store.ErrNotFound)
	one := store.Mark(fmt.Errorf("thing %q not found", "x"), errFeature)
	wrapped := fmt.Errorf("lookup: %w", one)
	for _, target := range []error{one, errFeature, store.ErrNotFound} {
		if !errors.Is(wrapped, target) {
			t.Errorf("errors.Is(%v, %v) = false", wrapped, target)
		}
	}
	if errors.Is(wrapped, store.ErrInvalid) {
		t.Errorf("%v matches store.ErrInvalid", wrapped)
	}
	if got, want := one.Error(), `thing "x" not found`; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	var me *store.MutationError
	batch := &store.MutationError{Noun: "event", Index: 2, Err: one}
	if !errors.As(fmt.Errorf("put: %w", batch), &me) || me.Index != 2 || !errors.Is(batch, store.ErrNotFound) {
		t.Errorf("a marked error in a MutationError: As = %v, Is = %v", me, errors.Is(batch, store.ErrNotFound))
	}
	if got, want := batch.Error(), `event 2: thing "x" not found`; got != want {
		t.Errorf("MutationError text = %q, want %q", got, want)
	}
	if got, want := (&store.MutationError{Index: 0, Err: store.ErrConflict}).Error(), "mutation 0: store: conflicts with existing configuration"; got != want {
		t.Errorf("MutationError without a noun = %q, want %q", got, want)
	}
}

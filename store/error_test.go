package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ebb-data/ebb/store"
)

// TestMark: a feature's error matches its kind and everything it matched
// before; its text keeps the package for logs, and a client reads the
// message alone.
func TestMark(t *testing.T) {
	errFeature := store.Mark(store.ErrNotFound, "feature", "no such thing")
	one := store.Mark(errFeature, "feature", fmt.Sprintf("thing %q not found", "x"))
	wrapped := fmt.Errorf("lookup: %w", one)
	for _, target := range []error{one, errFeature, store.ErrNotFound} {
		if !errors.Is(wrapped, target) {
			t.Errorf("errors.Is(%v, %v) = false", wrapped, target)
		}
	}
	if errors.Is(wrapped, store.ErrInvalid) {
		t.Errorf("%v matches store.ErrInvalid", wrapped)
	}
	if got, want := one.Error(), `feature: thing "x" not found`; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got, _ := store.ClientMessage(wrapped); got != `thing "x" not found` {
		t.Errorf("client message = %q, want %q", got, `thing "x" not found`)
	}
	var me *store.MutationError
	batch := &store.MutationError{Noun: "event", Index: 2, Err: one}
	if !errors.As(fmt.Errorf("put: %w", batch), &me) || me.Index != 2 || !errors.Is(batch, store.ErrNotFound) {
		t.Errorf("a marked error in a MutationError: As = %v, Is = %v", me, errors.Is(batch, store.ErrNotFound))
	}
	if got, want := batch.Error(), `event 2: feature: thing "x" not found`; got != want {
		t.Errorf("MutationError text = %q, want %q", got, want)
	}
	if got, want := (&store.MutationError{Index: 0, Err: store.ErrConflict}).Error(), "mutation 0: store: conflicts with existing configuration"; got != want {
		t.Errorf("MutationError without a noun = %q, want %q", got, want)
	}
}

// TestErrorMessages: every way of making an error keeps the house style's
// text for logs and carries the message a client reads, without package
// names, sentinel texts or a cause's text.
func TestErrorMessages(t *testing.T) {
	errThing := store.Mark(store.ErrNotFound, "feature", "no such thing")
	cause := errors.New("backend: /var/lib/ebb/000123.sst: input/output error")
	for _, c := range []struct {
		name      string
		err       error
		text, msg string
		is        []error
	}{
		{"sentinel alone", store.ErrInvalid, "store: invalid argument", "invalid argument", nil},
		{"sentinel with detail", store.Errorf(store.ErrInvalid, "empty key"),
			"store: invalid argument: empty key", "empty key", []error{store.ErrInvalid}},
		{"feature kind", store.Errorf(errThing, "%q", "x"),
			`feature: no such thing: "x"`, `no such thing: "x"`, []error{errThing, store.ErrNotFound}},
		{"wrapped by context", fmt.Errorf("feature: put %s: %w", "x", store.Errorf(store.ErrTooLarge, "value is %d bytes", 9)),
			"feature: put x: store: too large: value is 9 bytes", "value is 9 bytes", []error{store.ErrTooLarge}},
		{"cause not shown", store.Wrapf(store.ErrUnavailable, cause, "reading the disk failed"),
			"store: unavailable: reading the disk failed: " + cause.Error(), "reading the disk failed", []error{store.ErrUnavailable, cause}},
		{"error argument in its words", store.Errorf(store.ErrInvalid, "%w: index %q", store.Mark(nil, "feature", "over budget"), "ev"),
			`store: invalid argument: feature: over budget: index "ev"`, `over budget: index "ev"`, []error{store.ErrInvalid}},
		{"mutation", &store.MutationError{Noun: "item", Index: 3, Err: store.Errorf(store.ErrTooLarge, "value is 9 bytes, at most 8")},
			"item 3: store: too large: value is 9 bytes, at most 8", "item 3: value is 9 bytes, at most 8", []error{store.ErrTooLarge}},
		{"no message of its own", fmt.Errorf("feature: save: %w", fmt.Errorf("backend: %w", store.ErrUnavailable)),
			"feature: save: backend: store: unavailable", "unavailable", []error{store.ErrUnavailable}},
	} {
		if got := c.err.Error(); got != c.text {
			t.Errorf("%s: text %q, want %q", c.name, got, c.text)
		}
		if got, ok := store.ClientMessage(c.err); !ok || got != c.msg {
			t.Errorf("%s: client message %q (%v), want %q", c.name, got, ok, c.msg)
		}
		for _, target := range c.is {
			if !errors.Is(c.err, target) {
				t.Errorf("%s: does not match %v", c.name, target)
			}
		}
	}
	if msg, ok := store.ClientMessage(cause); ok {
		t.Errorf("an error made without a message reads %q to a client", msg)
	}
}

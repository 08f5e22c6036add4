package kit

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

func TestCheckValue(t *testing.T) {
	ok := []struct {
		t    store.Type
		in   any
		want any
	}{
		{store.TypeText, "", ""},
		{store.TypeText, "a\x00#|/", "a\x00#|/"},
		{store.TypeInt64, int64(math.MinInt64), int64(math.MinInt64)},
		{store.TypeInt64, int64(math.MaxInt64), int64(math.MaxInt64)},
	}
	for _, c := range ok {
		got, err := CheckValue(c.t, c.in)
		if err != nil || got != c.want {
			t.Errorf("CheckValue(%v, %#v) = %#v, %v", c.t, c.in, got, err)
		}
	}
	ts, err := CheckValue(store.TypeTimestamp, time.Date(1969, 1, 1, 0, 0, 0, 1_999_999, time.FixedZone("X", 7200)))
	if err != nil || ts.(time.Time).Location() != time.UTC || ts.(time.Time).Nanosecond() != 1_000_000 {
		t.Errorf("timestamp not truncated to ms in UTC: %v, %v", ts, err)
	}
	bad := []struct {
		t  store.Type
		in any
	}{
		{store.TypeText, []byte("a")}, {store.TypeText, "\xc3"}, {store.TypeText, nil},
		{store.TypeInt64, 1}, {store.TypeInt64, int32(1)}, {store.TypeInt64, uint64(1)}, {store.TypeInt64, 1.0},
		{store.TypeTimestamp, &time.Time{}}, {store.TypeTimestamp, int64(1)},
		{store.TypeBytes, "a"}, {store.TypeBytes, nil},
		{0, "a"},
	}
	for _, c := range bad {
		if _, err := CheckValue(c.t, c.in); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckValue(%v, %#v) err = %v, want store.ErrInvalid", c.t, c.in, err)
		}
	}
}

func TestCheckKeyEmptyPartition(t *testing.T) {
	cols := []store.Column{{Name: "a", Type: store.TypeText}, {Name: "b", Type: store.TypeBytes}, {Name: "c", Type: store.TypeInt64}}
	if _, err := CheckKey(cols, []any{"x", []byte{0}, int64(0)}, true); err != nil {
		t.Fatalf("valid key refused: %v", err)
	}
	for _, vals := range [][]any{
		{"", []byte{0}, int64(0)},
		{"x", []byte{}, int64(0)},
		{"x", []byte(nil), int64(0)},
	} {
		if _, err := CheckKey(cols, vals, true); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckKey(%#v) err = %v, want store.ErrInvalid", vals, err)
		}
		// Empty values are fine in clustering keys.
		if _, err := CheckKey(cols, vals, false); err != nil {
			t.Errorf("CheckKey(%#v, clustering) = %v", vals, err)
		}
	}
}

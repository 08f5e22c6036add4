package kit

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/ebb-data/ebb/store"
)

// CheckValue checks that v is a valid value of type t and returns it in
// canonical form (timestamps truncated to the millisecond, in UTC). A value
// already canonical is returned as it was passed, without a new allocation.
func CheckValue(t store.Type, v any) (any, error) {
	switch t {
	case store.TypeText:
		s, ok := v.(string)
		if !ok {
			break
		}
		if !utf8.ValidString(s) {
			return nil, store.Errorf(store.ErrInvalid, "text value is not valid UTF-8")
		}
		return v, nil
	case store.TypeInt64:
		if _, ok := v.(int64); ok {
			return v, nil
		}
	case store.TypeTimestamp:
		if ts, ok := v.(time.Time); ok {
			if ts.Location() == time.UTC && ts.Nanosecond()%int(time.Millisecond) == 0 {
				return v, nil
			}
			return time.UnixMilli(ts.UnixMilli()).UTC(), nil
		}
	case store.TypeBytes:
		if b, ok := v.([]byte); ok {
			if b == nil {
				return []byte{}, nil
			}
			return v, nil
		}
	}
	return nil, store.Errorf(store.ErrInvalid, "want %s, got %T", t, v)
}

// CheckKey checks a partition or clustering tuple against its columns and
// returns it in canonical form; vals itself is returned when it is already
// canonical. Empty text and bytes values are refused in partition keys
// (nonEmpty).
func CheckKey(cols []store.Column, vals []any, nonEmpty bool) ([]any, error) {
	if len(vals) != len(cols) {
		return nil, store.Errorf(store.ErrInvalid, "key has %d values, want %d (%s)", len(vals), len(cols), columnNames(cols))
	}
	out := vals
	for i, c := range cols {
		v, err := CheckValue(c.Type, vals[i])
		if err != nil {
			return nil, fmt.Errorf("key column %q: %w", c.Name, err)
		}
		if nonEmpty {
			if s, ok := v.(string); ok && s == "" {
				return nil, store.Errorf(store.ErrInvalid, "key column %q: empty partition key", c.Name)
			}
			if b, ok := v.([]byte); ok && len(b) == 0 {
				return nil, store.Errorf(store.ErrInvalid, "key column %q: empty partition key", c.Name)
			}
		}
		if !sameValue(v, vals[i]) {
			if &out[0] == &vals[0] {
				out = slices.Clone(vals)
			}
			out[i] = v
		}
	}
	return out, nil
}

// sameValue reports whether CheckValue returned its input unchanged.
func sameValue(canonical, in any) bool {
	switch c := canonical.(type) {
	case time.Time:
		t, ok := in.(time.Time)
		return ok && t == c
	case []byte:
		b, ok := in.([]byte)
		return ok && b != nil
	}
	return true
}

func columnNames(cols []store.Column) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ", "
		}
		s += c.Name
	}
	return s
}

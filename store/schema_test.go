package store

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	if err := wideSpec(Desc, time.Hour).Validate(); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	if err := MetaSpec.Validate(); err != nil {
		t.Fatalf("MetaSpec refused: %v", err)
	}
	cases := map[string]func(s *TableSpec){
		"empty name":               func(s *TableSpec) { s.Name = "" },
		"name starts with a digit": func(s *TableSpec) { s.Name = "1abc" },
		"name with a dash":         func(s *TableSpec) { s.Name = "a-b" },
		"name too long":            func(s *TableSpec) { s.Name = "a" + strings.Repeat("b", MaxNameLen) },
		"no partition key":         func(s *TableSpec) { s.PartitionKey = nil },
		"no values":                func(s *TableSpec) { s.Values = nil },
		"bad column name":          func(s *TableSpec) { s.Values[0].Name = "v v" },
		"duplicate column":         func(s *TableSpec) { s.Values[1].Name = "c1" },
		"unknown type":             func(s *TableSpec) { s.Values[0].Type = 0 },
		"type out of range":        func(s *TableSpec) { s.Values[0].Type = TypeBytes + 1 },
		"bad order":                func(s *TableSpec) { s.ClusteringOrder = 2 },
		"negative TTL":             func(s *TableSpec) { s.DefaultTTL = -time.Second },
		"index on key column":      func(s *TableSpec) { s.Indexes = []IndexSpec{{"ix", "c1"}} },
		"index on unknown":         func(s *TableSpec) { s.Indexes = []IndexSpec{{"ix", "zz"}} },
		"bad index name":           func(s *TableSpec) { s.Indexes = []IndexSpec{{"_ix", "v"}} },
		"duplicate index name":     func(s *TableSpec) { s.Indexes = []IndexSpec{{"ix", "v"}, {"ix", "n"}} },
		"column indexed twice":     func(s *TableSpec) { s.Indexes = []IndexSpec{{"ix", "v"}, {"iy", "v"}} },
		"too many columns": func(s *TableSpec) {
			for i := range MaxColumns {
				s.Values = append(s.Values, Column{Name: "x" + strings.Repeat("y", i), Type: TypeText})
			}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			s := wideSpec(Asc, 0)
			mutate(s)
			if err := s.Validate(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
		})
	}
	longest := wideSpec(Asc, 0)
	longest.Name = "a" + strings.Repeat("b", MaxNameLen-1)
	if err := longest.Validate(); err != nil {
		t.Errorf("name of %d characters refused: %v", MaxNameLen, err)
	}
}

func TestEqual(t *testing.T) {
	a := *wideSpec(Asc, time.Hour)
	if !a.Equal(*wideSpec(Asc, time.Hour)) {
		t.Fatal("identical specs differ")
	}
	changes := []func(s *TableSpec){
		func(s *TableSpec) { s.ClusteringOrder = Desc },
		func(s *TableSpec) { s.DefaultTTL = time.Minute },
		func(s *TableSpec) { s.Values = s.Values[:2] },
		func(s *TableSpec) { s.Values[0].Type = TypeBytes },
		func(s *TableSpec) { s.Clustering = s.Clustering[:1] },
		func(s *TableSpec) { s.Indexes = nil },
		func(s *TableSpec) { s.PartitionKey[0].Name = "q" },
		func(s *TableSpec) { s.Name = "other" },
	}
	for i, change := range changes {
		b := *wideSpec(Asc, time.Hour)
		change(&b)
		if a.Equal(b) {
			t.Errorf("change %d: specs still equal", i)
		}
	}
}

func TestCheckValue(t *testing.T) {
	ok := []struct {
		t    Type
		in   any
		want any
	}{
		{TypeText, "", ""},
		{TypeText, "a\x00#|/", "a\x00#|/"},
		{TypeInt64, int64(math.MinInt64), int64(math.MinInt64)},
		{TypeInt64, int64(math.MaxInt64), int64(math.MaxInt64)},
	}
	for _, c := range ok {
		got, err := CheckValue(c.t, c.in)
		if err != nil || got != c.want {
			t.Errorf("CheckValue(%v, %#v) = %#v, %v", c.t, c.in, got, err)
		}
	}
	ts, err := CheckValue(TypeTimestamp, time.Date(1969, 1, 1, 0, 0, 0, 1_999_999, time.FixedZone("X", 7200)))
	if err != nil || ts.(time.Time).Location() != time.UTC || ts.(time.Time).Nanosecond() != 1_000_000 {
		t.Errorf("timestamp not truncated to ms in UTC: %v, %v", ts, err)
	}
	bad := []struct {
		t  Type
		in any
	}{
		{TypeText, []byte("a")}, {TypeText, "\xc3"}, {TypeText, nil},
		{TypeInt64, 1}, {TypeInt64, int32(1)}, {TypeInt64, uint64(1)}, {TypeInt64, 1.0},
		{TypeTimestamp, &time.Time{}}, {TypeTimestamp, int64(1)},
		{TypeBytes, "a"}, {TypeBytes, nil},
		{0, "a"},
	}
	for _, c := range bad {
		if _, err := CheckValue(c.t, c.in); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckValue(%v, %#v) err = %v, want ErrInvalid", c.t, c.in, err)
		}
	}
}

func TestCheckKeyEmptyPartition(t *testing.T) {
	cols := []Column{{"a", TypeText}, {"b", TypeBytes}, {"c", TypeInt64}}
	if _, err := CheckKey(cols, []any{"x", []byte{0}, int64(0)}, true); err != nil {
		t.Fatalf("valid key refused: %v", err)
	}
	for _, vals := range [][]any{
		{"", []byte{0}, int64(0)},
		{"x", []byte{}, int64(0)},
		{"x", []byte(nil), int64(0)},
	} {
		if _, err := CheckKey(cols, vals, true); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckKey(%#v) err = %v, want ErrInvalid", vals, err)
		}
		// Empty values are fine in clustering keys.
		if _, err := CheckKey(cols, vals, false); err != nil {
			t.Errorf("CheckKey(%#v, clustering) = %v", vals, err)
		}
	}
}

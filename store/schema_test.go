package store

import (
	"errors"
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

func wideSpec(order Order, ttl time.Duration) *TableSpec {
	return &TableSpec{
		Name:            "wide",
		PartitionKey:    []Column{{"p", TypeText}},
		Clustering:      []Column{{"c1", TypeInt64}, {"c2", TypeText}},
		ClusteringOrder: order,
		Values:          []Column{{"v", TypeText}, {"n", TypeInt64}, {"b", TypeBytes}, {"ts", TypeTimestamp}},
		DefaultTTL:      ttl,
		Indexes:         []IndexSpec{{"by_v", "v"}},
	}
}

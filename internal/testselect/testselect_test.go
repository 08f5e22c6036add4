package testselect_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/ebb-data/ebb/internal/testselect"
)

// TestParse checks what each selection runs: the embedded backend alone by
// default, every backend for "all", and exactly the named ones for a list.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", []string{"pebble"}},
		{"  ", []string{"pebble"}},
		{"pebble", []string{"pebble"}},
		{"all", []string{"pebble", "dynalite", "dynamodb-local", "cql", "cql-cluster"}},
		{"ALL", []string{"pebble", "dynalite", "dynamodb-local", "cql", "cql-cluster"}},
		{"cql-cluster", []string{"cql-cluster"}},
		{"cql-cluster,cql", []string{"cql", "cql-cluster"}},
		{"cql", []string{"cql"}},
		{"pebble,cql", []string{"pebble", "cql"}},
		{" cql , pebble ,", []string{"pebble", "cql"}},
		{"dynamodb", []string{"dynalite", "dynamodb-local"}},
		{"dynamodb-local,dynalite,dynalite", []string{"dynalite", "dynamodb-local"}},
	} {
		got, err := testselect.Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	for _, in := range []string{"cassandra", "pebble,dynamo", "none"} {
		if got, err := testselect.Parse(in); !errors.Is(err, testselect.ErrUnknown) {
			t.Errorf("Parse(%q) = %v, %v; want ErrUnknown", in, got, err)
		}
	}
}

// TestSelectedFollowsEnv checks that Selected reads the environment.
func TestSelectedFollowsEnv(t *testing.T) {
	t.Setenv(testselect.Env, "")
	if !testselect.Selected(t, testselect.Pebble) || testselect.Selected(t, testselect.CQL) {
		t.Fatal("unset selection: want pebble only")
	}
	t.Setenv(testselect.Env, "cql")
	if testselect.Selected(t, testselect.Pebble) || !testselect.Selected(t, testselect.CQL) {
		t.Fatal("cql selection: want cql only")
	}
	t.Setenv(testselect.Env, "all")
	for _, b := range testselect.Backends {
		if !testselect.Selected(t, b) {
			t.Fatalf("all: %s not selected", b)
		}
	}
}

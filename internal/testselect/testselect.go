// Package testselect reads EBB_TEST_BACKENDS, which chooses the store
// backends the tests run on. The default is the embedded backend alone, so
// a plain `go test ./...` needs nothing installed; `make test` sets "all".
// A backend that is not selected is skipped, with a message that says how
// to select it; a backend that is selected but has no endpoint fails the
// test, never skips it, so that a run which did not cover a backend cannot
// pass for one that did. It is for tests only.
package testselect

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Env is the environment variable holding the selection: "all", or a
// comma-separated list of backend and group names.
const Env = "EBB_TEST_BACKENDS"

// The backends a selection names. DynamoDBLocal also covers the idle
// DynamoDB Local that serves the native TTL test. CQLCluster is a
// three-node Cassandra cluster (EBB_CQL_CLUSTER_HOSTS), on which the tests
// of node failures and of schema changes through several coordinators
// run; CQL's variants of the backend-independent suites run on the hosts in
// EBB_CQL_HOSTS (under make test, the cluster's for the store's and the
// feature suites' packages and a lone node's for the rest: the Makefile's
// CLUSTER_PACKAGES).
const (
	Pebble        = "pebble"
	Dynalite      = "dynalite"
	DynamoDBLocal = "dynamodb-local"
	CQL           = "cql"
	CQLCluster    = "cql-cluster"
)

// Backends lists every backend, in the order the tests run them.
var Backends = []string{Pebble, Dynalite, DynamoDBLocal, CQL, CQLCluster}

// groups are the names that stand for more than one backend.
var groups = map[string][]string{
	"all":      Backends,
	"dynamodb": {Dynalite, DynamoDBLocal},
}

// Default is the selection when Env is unset or empty.
const Default = Pebble

// ErrUnknown marks a selection that names no backend or group.
var ErrUnknown = errors.New("testselect: unknown backend")

// KeepCQLKeyspacesEnv, set to 1, leaves each CQL test keyspace on the
// cluster when its test ends instead of dropping it: for a throw-away
// cluster that is emptied before the next suites (make test's three nodes,
// restarted empty before each group of packages by
// scripts/cassandra-cluster-mode.sh fresh).
// A drop is most of what a test costs a node: Cassandra snapshots each
// table it drops and flushes every table with data in the commit log,
// its own schema and system tables included (measured on the three fast
// nodes, multitable's cql variants under the race detector: 85 to 106
// node-CPU-seconds and 92 to 101 s with the drops, 35 to 50 and 35 to 46 s
// without). Unset, keyspaces are dropped, as a cluster that outlives the
// tests needs: left behind, they pile up, and every schema change and the
// nodes' heap pay for them (the six cluster packages' cql variants run on
// one cluster without the drops cost its nodes more than with them).
const KeepCQLKeyspacesEnv = "EBB_CQL_KEEP_KEYSPACES"

// KeepCQLKeyspaces reports whether EBB_CQL_KEEP_KEYSPACES is 1. It is
// read here, beside the selection, so that store/cql's own tests (which
// cannot import store/cql/cqltest) and cqltest follow one rule.
func KeepCQLKeyspaces() bool { return os.Getenv(KeepCQLKeyspacesEnv) == "1" }

// Parse returns the backends a selection names, in the order of Backends.
// An empty selection means Default.
func Parse(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		v = Default
	}
	var picked []string
	for _, name := range strings.Split(v, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case name == "":
			continue
		case slices.Contains(Backends, name):
			picked = append(picked, name)
		case groups[name] != nil:
			picked = append(picked, groups[name]...)
		default:
			return nil, fmt.Errorf("%w %q in %s=%q: want all, or a comma-separated list of %s and dynamodb (%s and %s)",
				ErrUnknown, name, Env, v, strings.Join(Backends, ", "), Dynalite, DynamoDBLocal)
		}
	}
	var out []string
	for _, b := range Backends {
		if slices.Contains(picked, b) {
			out = append(out, b)
		}
	}
	return out, nil
}

// Selected reports whether the environment's selection includes backend.
// A malformed selection fails the test.
func Selected(t testing.TB, backend string) bool {
	t.Helper()
	if !slices.Contains(Backends, backend) {
		t.Fatalf("testselect: %q is not a backend (want one of %v)", backend, Backends)
	}
	picked, err := Parse(os.Getenv(Env))
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(picked, backend)
}

// Need skips the test when the selection leaves backend out, and says how
// to select it. It returns when backend is selected; the caller then
// requires its endpoint and fails without one.
func Need(t testing.TB, backend string) {
	t.Helper()
	if !Selected(t, backend) {
		t.Skipf("%s backend not selected (%s=%q; default %q): set %s=all, as `make test` does, or name %s in the list",
			backend, Env, os.Getenv(Env), Default, Env, backend)
	}
}

// Everything reports whether the selection names every backend, as `make
// test` does. Tests of other outside parts (the browser the dashboard's
// tests drive) take it to mean that their part is required too: missing,
// it fails them rather than skips them.
func Everything(t testing.TB) bool {
	t.Helper()
	picked, err := Parse(os.Getenv(Env))
	if err != nil {
		t.Fatal(err)
	}
	return len(picked) == len(Backends)
}

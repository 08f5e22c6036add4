package testbackend_test

import (
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

// TestEach checks that every selected backend runs, under its name, on a
// fresh store whose read-resolved expiry follows the clock it was given,
// and that the others do not.
func TestEach(t *testing.T) {
	spec := store.TableSpec{
		Name:         "probe",
		PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
		Clustering:   []store.Column{{Name: "k", Type: store.TypeInt64}},
		Values:       []store.Column{{Name: "v", Type: store.TypeText}},
	}
	var ran []string
	testbackend.Each(t, func(t *testing.T, open testbackend.Factory) {
		ran = append(ran, t.Name())
		ctx := t.Context()
		clock := storetest.NewClock(storetest.Epoch)
		st := open(t, clock.Now)
		infos, err := st.Tables(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 0 {
			t.Fatalf("fresh store has tables %+v", infos)
		}
		if err := st.CreateTable(ctx, spec); err != nil {
			t.Fatal(err)
		}
		err = st.Write(ctx, "probe", []store.Mutation{{
			Partition: []any{"a"}, Clustering: []any{int64(1)},
			Cells:     []store.Cell{{Column: "v", Value: "x"}},
			ExpiresAt: storetest.Epoch.Add(time.Second),
		}})
		if err != nil {
			t.Fatal(err)
		}
		row, err := st.Get(ctx, "probe", []any{"a"}, []any{int64(1)})
		if err != nil {
			t.Fatal(err)
		}
		if row.Values[0] != "x" {
			t.Fatalf("read %v, want x", row.Values[0])
		}
		clock.Advance(time.Second)
		if _, err := st.Get(ctx, "probe", []any{"a"}, []any{int64(1)}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get at expiry: %v, want ErrNotFound", err)
		}
	})
	var want []string
	for _, b := range testbackend.All() {
		if testselect.Selected(t, b.Backend) {
			want = append(want, "TestEach/"+b.Name)
		}
	}
	if !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
	if len(ran) == 0 {
		t.Fatalf("%s=%q selects no backend", testselect.Env, os.Getenv(testselect.Env))
	}
}

// TestEachParallel checks that EachParallel runs every selected backend,
// under its name, once, and skips the others, as Each does.
func TestEachParallel(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	t.Run("group", func(t *testing.T) {
		testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
			st := open(t, nil)
			if _, err := st.Tables(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			ran = append(ran, t.Name())
			mu.Unlock()
		})
	})
	var want []string
	for _, b := range testbackend.All() {
		if testselect.Selected(t, b.Backend) {
			want = append(want, "TestEachParallel/group/"+b.Name)
		}
	}
	slices.Sort(ran)
	slices.Sort(want)
	if !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// TestAllNamesEveryBackend checks that All offers every backend a selection
// can name but the cluster, each under the subtest name the suites have
// always used.
func TestAllNamesEveryBackend(t *testing.T) {
	var names, backends []string
	for _, b := range testbackend.All() {
		names = append(names, b.Name)
		backends = append(backends, b.Backend)
	}
	if want := []string{"pebble", "dynamodb", "dynamodb-local", "cql"}; !slices.Equal(names, want) {
		t.Errorf("subtest names %v, want %v", names, want)
	}
	// The three-node cluster is no backend of the suites: its own tests
	// (store/cql/cqlcluster) and make's cluster-run select it.
	want := slices.DeleteFunc(slices.Clone(testselect.Backends), func(b string) bool { return b == testselect.CQLCluster })
	if !slices.Equal(backends, want) {
		t.Errorf("backends %v, want %v", backends, want)
	}
}

// TestPebbleFollowsTheSelection checks that a test opening the embedded
// backend directly is skipped when the selection leaves pebble out, as a
// remote backend's tests are, and runs when it names pebble.
func TestPebbleFollowsTheSelection(t *testing.T) {
	for _, c := range []struct {
		selection string
		skipped   bool
	}{{"cql", true}, {"pebble,cql", false}, {"", false}} {
		t.Run(c.selection, func(t *testing.T) {
			t.Setenv(testselect.Env, c.selection)
			var opened bool
			inner := t.Run("open", func(t *testing.T) {
				testbackend.Pebble(t, nil)
				opened = true
			})
			if !inner {
				t.Fatal("the subtest failed")
			}
			if opened == c.skipped {
				t.Errorf("%s=%q: opened %v, want skipped %v", testselect.Env, c.selection, opened, c.skipped)
			}
		})
	}
}

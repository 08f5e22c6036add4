// Package dynamotest gives tests a DynamoDB-backed store.Store on one of
// two endpoints: EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh starts
// dynalite and sets it) and EBB_DYNAMODB_LOCAL_ENDPOINT
// (scripts/with-dynamodb-local.sh starts Amazon's DynamoDB Local and sets
// it). dynalite is an independent implementation without transactions or a
// TTL process; DynamoDB Local has both, so the transactional write path and
// native TTL run there. Each Store gets a table prefix of its own, so tests
// share one endpoint without seeing each other's tables, and its tables are
// dropped when the test ends. A target runs only when EBB_TEST_BACKENDS
// selects it (package internal/testselect); selected without its endpoint,
// it fails the test.
package dynamotest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
)

// EnvEndpoint is the environment variable naming the endpoint under test
// (dynalite under `make test`).
const EnvEndpoint = "EBB_DYNAMODB_ENDPOINT"

// EnvLocalEndpoint is the environment variable naming Amazon's DynamoDB
// Local.
const EnvLocalEndpoint = "EBB_DYNAMODB_LOCAL_ENDPOINT"

// Target is one endpoint the DynamoDB tests run against.
type Target struct {
	// Name is the subtest name of the backend it serves ("dynamodb").
	Name string
	// Env is the environment variable holding the endpoint URL.
	Env string
	// Script starts the endpoint and sets Env.
	Script string
	// Backend is the name EBB_TEST_BACKENDS selects it by.
	Backend string
}

// Targets.
var (
	Dynalite = Target{Name: "dynamodb", Env: EnvEndpoint, Script: "scripts/with-dynalite.sh",
		Backend: testselect.Dynalite}
	DynamoDBLocal = Target{Name: "dynamodb-local", Env: EnvLocalEndpoint, Script: "scripts/with-dynamodb-local.sh",
		Backend: testselect.DynamoDBLocal}
	// DynamoDBLocalTTL is an idle DynamoDB Local of its own for the test
	// of its native TTL process, which scans every table of the instance
	// and falls minutes behind when the other suites' tables share it.
	DynamoDBLocalTTL = Target{Name: "dynamodb-local-ttl", Env: "EBB_DYNAMODB_TTL_ENDPOINT",
		Script:  "EBB_DYNAMODB_LOCAL_VAR=EBB_DYNAMODB_TTL_ENDPOINT scripts/with-dynamodb-local.sh",
		Backend: testselect.DynamoDBLocal}
)

// Endpoint returns the target's endpoint, or "" when none is configured.
func (g Target) Endpoint() string { return os.Getenv(g.Env) }

// Require skips the test when EBB_TEST_BACKENDS does not select the
// target, and fails it (it never skips) when the target is selected but its
// endpoint is not configured.
func (g Target) Require(t testing.TB) string {
	t.Helper()
	testselect.Need(t, g.Backend)
	ep := g.Endpoint()
	if ep == "" {
		t.Fatalf("%s=%q selects %s, but %s is not set: run the DynamoDB tests with `make test`, or through "+
			"`scripts/with-dynalite.sh scripts/with-dynamodb-local.sh go test ...`, which start "+
			"dynalite and DynamoDB Local, or point %s at a DynamoDB API endpoint (%s starts one)",
			testselect.Env, os.Getenv(testselect.Env), g.Backend, g.Env, g.Env, g.Script)
	}
	return ep
}

// Options returns options for the target with a fresh prefix, a short
// timeout and the given clock. Native TTL stays off: test clocks are
// driven by hand, far from the provider's clock, and a TTL process that
// works from the real clock (DynamoDB Local's deletes within about a
// second) would delete rows the test clock still holds live. The backstop
// has a real-clock test of its own.
func (g Target) Options(t testing.TB, now func() time.Time) dynamo.Options {
	t.Helper()
	o := dynamo.DefaultOptions()
	o.Endpoint = g.Require(t)
	o.TablePrefix = Prefix()
	o.Now = now
	o.Timeout = 30 * time.Second
	o.TableTimeout = 2 * time.Minute
	o.NoNativeTTL = true
	return o
}

// New opens a Store with g.Options(t, now) and drops every table it
// created, and its catalog, when the test ends.
func (g Target) New(t testing.TB, now func() time.Time) *dynamo.Store {
	t.Helper()
	return Open(t, g.Options(t, now))
}

// Endpoint returns the endpoint in EBB_DYNAMODB_ENDPOINT, or "".
func Endpoint() string { return Dynalite.Endpoint() }

// Require is Dynalite.Require: it skips the test unless dynalite is
// selected, and fails it when EBB_DYNAMODB_ENDPOINT is not set.
func Require(t testing.TB) string {
	t.Helper()
	return Dynalite.Require(t)
}

var seq atomic.Int64

// Prefix returns a table prefix unique to this process and call.
func Prefix() string {
	return fmt.Sprintf("ebbt%06x_%d_", rand.Uint32()&0xffffff, seq.Add(1))
}

// Options is Dynalite.Options: options for EBB_DYNAMODB_ENDPOINT.
func Options(t testing.TB, now func() time.Time) dynamo.Options {
	t.Helper()
	return Dynalite.Options(t, now)
}

// New is Dynalite.New: a Store on EBB_DYNAMODB_ENDPOINT.
func New(t testing.TB, now func() time.Time) *dynamo.Store {
	t.Helper()
	return Dynalite.New(t, now)
}

// Open opens a Store with the given options and registers the cleanup of
// New.
func Open(t testing.TB, o dynamo.Options) *dynamo.Store {
	t.Helper()
	s, err := dynamo.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("open DynamoDB store at %s: %v", o.Endpoint, err)
	}
	t.Cleanup(func() {
		if err := Drop(context.Background(), s); err != nil {
			t.Errorf("drop test tables: %v", err)
		}
		_ = s.Close()
	})
	return s
}

// Drop drops every table of a Store's prefix and then its catalog. It works
// on a closed Store too.
func Drop(ctx context.Context, s *dynamo.Store) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client, prefix := s.Client(), s.TablePrefix()
	var start *string
	var names []string
	for {
		out, err := client.ListTables(ctx, &dynamodb.ListTablesInput{ExclusiveStartTableName: start})
		if err != nil {
			return err
		}
		for _, n := range out.TableNames {
			if len(n) >= len(prefix) && n[:len(prefix)] == prefix {
				names = append(names, n)
			}
		}
		if out.LastEvaluatedTableName == nil {
			break
		}
		start = out.LastEvaluatedTableName
	}
	for _, n := range names {
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		if err != nil && !strings.Contains(err.Error(), "ResourceNotFoundException") &&
			!strings.Contains(err.Error(), "ResourceInUseException") {
			return fmt.Errorf("delete %s: %w", n, err)
		}
	}
	return nil
}

var _ store.Store = (*dynamo.Store)(nil)

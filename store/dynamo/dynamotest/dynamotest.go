// Package dynamotest gives tests a DynamoDB-backed store.Store on the
// endpoint named by EBB_DYNAMODB_ENDPOINT (scripts/with-dynalite.sh starts
// dynalite and sets it). Each Store gets a table prefix of its own, so tests
// share one endpoint without seeing each other's tables, and its tables are
// dropped when the test ends.
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
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
)

// EnvEndpoint is the environment variable naming the endpoint under test.
const EnvEndpoint = "EBB_DYNAMODB_ENDPOINT"

// Endpoint returns the endpoint under test, or "" when none is configured.
func Endpoint() string { return os.Getenv(EnvEndpoint) }

// Require fails the test (it never skips) when no endpoint is configured.
func Require(t testing.TB) string {
	t.Helper()
	ep := Endpoint()
	if ep == "" {
		t.Fatalf("%s is not set: run the DynamoDB tests with `make test` or "+
			"`scripts/with-dynalite.sh go test ./...`, which start dynalite, "+
			"or point %s at a DynamoDB API endpoint", EnvEndpoint, EnvEndpoint)
	}
	return ep
}

var seq atomic.Int64

// Prefix returns a table prefix unique to this process and call.
func Prefix() string {
	return fmt.Sprintf("ebbt%06x_%d_", rand.Uint32()&0xffffff, seq.Add(1))
}

// Options returns options for the endpoint under test with a fresh prefix,
// a short timeout and the given clock.
func Options(t testing.TB, now func() time.Time) dynamo.Options {
	t.Helper()
	o := dynamo.DefaultOptions()
	o.Endpoint = Require(t)
	o.TablePrefix = Prefix()
	o.Now = now
	o.Timeout = 30 * time.Second
	o.TableTimeout = 2 * time.Minute
	return o
}

// New opens a Store with Options(t, now) and drops every table it created,
// and its catalog, when the test ends.
func New(t testing.TB, now func() time.Time) *dynamo.Store {
	t.Helper()
	return Open(t, Options(t, now))
}

// Open opens a Store with the given options and registers the same cleanup
// as New.
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

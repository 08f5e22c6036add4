package dynamolegacy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/migrate/dynamolegacy"
	"github.com/ebb-data/ebb/migrate/migratetest"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// createLegacy creates a DynamoDB table as an application would have:
// pk (S) and sk (S) keys, native TTL on "expires".
func createLegacy(t *testing.T, client *dynamodb.Client, name string) {
	t.Helper()
	ctx := t.Context()
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's default first pause is 20 s; a test endpoint creates a
	// table in milliseconds.
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires"), Enabled: aws.Bool(true)},
	})
	// dynalite has no TTL process and refuses the call; the attribute is
	// written all the same, and ebb filters on it.
	if err != nil && !strings.Contains(err.Error(), "UnknownOperationException") {
		t.Fatal(err)
	}
}

func run(t *testing.T, target dynamotest.Target, n int) {
	clock := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	st := target.New(t, clock.Now)
	name := st.TablePrefix() + "legacy_events"
	createLegacy(t, st.Client(), name)
	migratetest.Run(t, migratetest.Env{
		Store: st,
		Clock: clock,
		Legacy: migrate.LegacyConfig{Kind: migrate.KindDynamoDB, Table: name, Mapping: &migrate.Mapping{
			IndexID: "pk", SortKey: "sk", SortKeyFormat: migrate.SortTimestampEventID, Payload: "body", TTL: "expires",
		}},
		Open: func(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
			return dynamolegacy.Open(ctx, st.Client(), cfg)
		},
		Events: n,
		IDs:    20,
	})
}

// TestEndToEndDynalite migrates an index off a DynamoDB legacy table on
// dynalite.
func TestEndToEndDynalite(t *testing.T) { run(t, dynamotest.Dynalite, migratetest.Events(t, 10000)) }

// TestEndToEndDynamoDBLocal does it on Amazon's DynamoDB Local, whose TTL
// process deletes the legacy rows already expired while the test runs.
func TestEndToEndDynamoDBLocal(t *testing.T) {
	run(t, dynamotest.DynamoDBLocal, migratetest.Events(t, 10000))
}

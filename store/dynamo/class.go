package dynamo

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/store"
)

// classLimit is DynamoDB's limit on table-class changes
// (store.DynamoDBClasses, which Capabilities reports too). As with
// capacity switches, ebb checks its own record of changes first, so the
// limit surfaces as store.ErrCapacityLimit before anything is sent.
var classLimit = store.DynamoDBClasses

// The catalog attributes of a table's class and of its history of class
// changes (Unix ms, JSON).
const (
	attrClass        = "class"
	attrClassHistory = "class_changes"
)

// dynamoClass is the service's name of a class.
func dynamoClass(c store.TableClass) types.TableClass {
	if c.Or() == store.ClassInfrequentAccess {
		return types.TableClassStandardInfrequentAccess
	}
	return types.TableClassStandard
}

// SetTableClass moves a table to class c with UpdateTable and records the
// class and the change in the catalog; see store.ClassSetter. DynamoDB
// Local, dynalite and Alternator refuse UpdateTable with a TableClass: on
// them the service's error is returned and nothing is recorded.
func (s *Store) SetTableClass(ctx context.Context, name string, c store.TableClass) error {
	c, err := store.ParseTableClass(string(c))
	if err != nil {
		return err
	}
	ctx, cancel, t, err := s.tables.Begin(ctx, name)
	if err != nil {
		return err
	}
	defer cancel()
	e, _, err := s.readEntry(ctx, name)
	if err != nil {
		return err
	}
	if e.class.Or() == c.Or() {
		return nil
	}
	now := s.now()
	history, allowed := classLimit.Allowed(e.classChanges, now)
	if !allowed {
		return store.Errorf(store.ErrCapacityLimit, "%s changed table class %d times in the last 30 days", name, len(history))
	}
	if err := s.waitTable(ctx, t.physical, false); err != nil {
		return err
	}
	if _, err := s.client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(t.physical), TableClass: dynamoClass(c)}); err != nil {
		return s.tableErr(ctx, t, "set table class of", err)
	}
	if err := s.waitTable(ctx, t.physical, false); err != nil {
		return err
	}
	histDoc, _ := json.Marshal(append(history, now.UnixMilli()))
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.catalog),
		Key:                      map[string]types.AttributeValue{catalogKey: catalogID(name)},
		UpdateExpression:         aws.String("SET #c = :c, #h = :h"),
		ConditionExpression:      aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#c": attrClass, "#h": attrClassHistory, "#k": catalogKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberS{Value: string(c.Or())},
			":h": &types.AttributeValueMemberS{Value: string(histDoc)},
		},
	})
	if isConditionFailed(err) {
		return store.Errorf(store.ErrTableNotFound, "%q dropped meanwhile", name)
	}
	return mapErr(ctx, "record table class of "+name, err)
}

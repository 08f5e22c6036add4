package dynamo

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/store"
)

// switchLimit is DynamoDB's limit on switches from provisioned to
// on-demand (store.DynamoDBSwitches, which Capabilities reports too). ebb
// checks its own record of switches first, so the limit surfaces as
// store.ErrCapacityLimit before anything is sent. The history the limit is
// checked against holds the Unix ms times of earlier provisioned ->
// on-demand switches.
var switchLimit = store.DynamoDBSwitches

// SetCapacity changes a table's billing mode, provisioned throughput and
// warm throughput with UpdateTable and records the setting in the catalog;
// see store.Store. Where the endpoint has no warm throughput (emulators,
// Alternator) the warm figures are recorded only.
func (s *Store) SetCapacity(ctx context.Context, name string, c store.Capacity) error {
	ctx, cancel, err := s.core.BeginCapacity(ctx, c)
	if err != nil {
		return err
	}
	defer cancel()
	t, err := s.lookup(ctx, name)
	if err != nil {
		return err
	}
	e, _, err := s.readEntry(ctx, name)
	if err != nil {
		return err
	}
	d, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.physical)})
	if err != nil {
		return s.tableErr(ctx, t, "set capacity of", err)
	}
	current := store.Provisioned
	if d.Table.BillingModeSummary != nil && d.Table.BillingModeSummary.BillingMode == types.BillingModePayPerRequest {
		current = store.OnDemand
	}
	now := s.now()
	history, allowed := switchLimit.Allowed(e.switches, now)
	switching := current == store.Provisioned && c.Mode == store.OnDemand
	if switching && !allowed {
		return store.Errorf(store.ErrCapacityLimit, "%s switched from provisioned to on-demand %d times in the last 24 h", name, len(history))
	}

	in := &dynamodb.UpdateTableInput{TableName: aws.String(t.physical)}
	changed := false
	switch c.Mode {
	case store.OnDemand:
		if current != store.OnDemand {
			in.BillingMode, changed = types.BillingModePayPerRequest, true
		}
	case store.Provisioned:
		pt := d.Table.ProvisionedThroughput
		same := current == store.Provisioned && pt != nil &&
			aws.ToInt64(pt.ReadCapacityUnits) == c.ReadUnits && aws.ToInt64(pt.WriteCapacityUnits) == c.WriteUnits
		if !same {
			in.BillingMode, changed = types.BillingModeProvisioned, true
			in.ProvisionedThroughput = &types.ProvisionedThroughput{
				ReadCapacityUnits: aws.Int64(c.ReadUnits), WriteCapacityUnits: aws.Int64(c.WriteUnits),
			}
		}
	}
	if s.caps.WarmThroughput && (c.WarmRead > 0 || c.WarmWrite > 0) {
		in.WarmThroughput = &types.WarmThroughput{}
		if c.WarmRead > 0 {
			in.WarmThroughput.ReadUnitsPerSecond = aws.Int64(c.WarmRead)
		}
		if c.WarmWrite > 0 {
			in.WarmThroughput.WriteUnitsPerSecond = aws.Int64(c.WarmWrite)
		}
		changed = true
	}
	if changed {
		if err := s.waitTable(ctx, t.physical, false); err != nil {
			return err
		}
		if _, err := s.client.UpdateTable(ctx, in); err != nil {
			return s.tableErr(ctx, t, "set capacity of", err)
		}
		if err := s.waitTable(ctx, t.physical, false); err != nil {
			return err
		}
	}
	if switching {
		history = append(history, now.UnixMilli())
	}
	capDoc, _ := json.Marshal(c)
	histDoc, _ := json.Marshal(history)
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.catalog),
		Key:                      map[string]types.AttributeValue{catalogKey: catalogID(name)},
		UpdateExpression:         aws.String("SET #c = :c, #h = :h"),
		ConditionExpression:      aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#c": attrCap, "#h": attrHistory, "#k": catalogKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberS{Value: string(capDoc)},
			":h": &types.AttributeValueMemberS{Value: string(histDoc)},
		},
	})
	if isConditionFailed(err) {
		return store.Errorf(store.ErrTableNotFound, "%q dropped meanwhile", name)
	}
	return mapErr(ctx, "record capacity of "+name, err)
}

package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// conditionExpr renders a store condition as a DynamoDB condition
// expression over this backend's item layout, evaluated by the service
// atomically with the write. "Live" follows the read path: the marker (x)
// or a cell's expiry (eI) after now. A comparison with a missing attribute
// is false in DynamoDB, so a missing item, marker or cell is not live.
func conditionExpr(b *exprBuilder, spec *store.TableSpec, c *kit.ResolvedCondition, now int64) string {
	n := b.value(numAttr(now))
	switch c.Kind {
	case store.IfEquals:
		return fmt.Sprintf("(%s = %s AND %s > %s)", b.name(vName(c.Col)), b.value(encodeValue(c.Value)), b.name(eName(c.Col)), n)
	}
	live := []string{fmt.Sprintf("%s > %s", b.name(attrMarker), n)}
	for i := range spec.Values {
		live = append(live, fmt.Sprintf("%s > %s", b.name(eName(i)), n))
	}
	expr := "(" + strings.Join(live, " OR ") + ")"
	if c.Kind == store.IfAbsent {
		return "NOT " + expr
	}
	return expr
}

// conditional sends the one op of a conditional mutation with its
// condition; a failed condition is ErrConflict and writes nothing.
func (s *Store) conditional(ctx context.Context, t *table, o *op, c *kit.ResolvedCondition) error {
	now := s.now().UnixMilli()
	var err error
	switch o.kind {
	case opPut:
		b := newExpr()
		cond := conditionExpr(b, &t.spec, c, now)
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(t.physical), Item: o.item, ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: b.names, ExpressionAttributeValues: b.valueMap(),
		})
	case opDelete:
		b := newExpr()
		cond := conditionExpr(b, &t.spec, c, now)
		_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(t.physical), Key: o.key(), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: b.names, ExpressionAttributeValues: b.valueMap(),
		})
	case opUpdate:
		// update's own TTL conditions are joined to the caller's. When
		// both of its complementary attempts fail, either the caller's
		// condition does not hold or a concurrent writer changed the row
		// between them; a consistent read tells which, so that a write
		// whose condition holds is not refused for a race it lost.
		err = s.update(ctx, t, o, func(b *exprBuilder) string { return conditionExpr(b, &t.spec, c, now) },
			func(ctx context.Context) (bool, error) {
				out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
					TableName: aws.String(t.physical), Key: o.key(), ConsistentRead: aws.Bool(true),
				})
				if err != nil {
					return false, err
				}
				return conditionHolds(&t.spec, c, out.Item, now), nil
			})
	default:
		return store.Errorf(store.ErrInvalid, "a conditional mutation must be an Upsert, DeleteRow or DeleteCells")
	}
	if isConditionFailed(err) {
		return &store.MutationError{Index: 0, Err: store.ErrConflict}
	}
	return err
}

// conditionHolds evaluates c on an item as read (nil when there is none) at
// now, as conditionExpr does on the service.
func conditionHolds(spec *store.TableSpec, c *kit.ResolvedCondition, item map[string]types.AttributeValue, now int64) bool {
	switch c.Kind {
	case store.IfAbsent:
		return item == nil || !itemLive(spec, item, now)
	case store.IfExists:
		return item != nil && itemLive(spec, item, now)
	}
	av, ok := item[vName(c.Col)]
	if !ok {
		return false
	}
	if e, ok := numOf(item, eName(c.Col)); !ok || !liveAt(e, now) {
		return false
	}
	v, err := decodeValue(spec.Values[c.Col].Type, av)
	return err == nil && kit.ValuesEqual(v, c.Value)
}

package dynamo

import (
	"bytes"
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ebb-data/ebb/store"
)

// afterPartition is a sort key above every item's (theirs start with a
// space byte below it): resuming a Scan after (pk, afterPartition) skips
// whatever is left of partition pk.
var afterPartition = []byte{0xFF}

// Partitions lists a table's partitions (store.PartitionLister) with
// strongly consistent Scan requests projecting the partition key alone.
// DynamoDB returns the items of one partition together, in sort key
// order, so a partition is handed out when its first item comes and the
// items after it with the same key are skipped. Each request asks for one
// item more than the page still needs, and the next request (and the
// next page, whose token is the encoded key of the last partition handed
// out) starts after the largest sort key that partition could hold, so
// the rest of a partition is never scanned and no partition is listed
// twice. A Scan's read units are charged on the items it reads, not on
// what it returns: a request costs what reading its items whole would,
// so a listing reads at most about limit items of each partition, at
// most the whole table once, and less when partitions are larger. The
// SDK retries throttling inside each request, as for every other call,
// and Options.Timeout bounds one page.
func (s *Store) Partitions(ctx context.Context, name string, after []byte, limit int, fn func(partition []any) error) ([]byte, error) {
	if err := store.CheckLimit(limit); err != nil {
		return nil, err
	}
	ctx, cancel, t, err := s.tables.Begin(ctx, name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	in := &dynamodb.ScanInput{
		TableName:                aws.String(t.physical),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		ConsistentRead:           aws.Bool(true),
	}
	past := func(pk []byte) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{attrPK: bytesAttr(pk), attrSK: bytesAttr(afterPartition)}
	}
	if after != nil {
		in.ExclusiveStartKey = past(after)
	}
	n := 0
	var last []byte
	for {
		if err := ctx.Err(); err != nil {
			return nil, s.tableErr(ctx, t, "list partitions of", err)
		}
		// What the page still needs plus one item, which tells whether
		// a next page exists.
		in.Limit = aws.Int32(int32(limit - n + 1))
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return nil, s.tableErr(ctx, t, "list partitions of", err)
		}
		for _, item := range out.Items {
			pk := bytesOf(item, attrPK)
			if last != nil && bytes.Equal(pk, last) {
				continue
			}
			if n == limit {
				return last, nil
			}
			p, rest, err := store.DecodeTuple(t.spec.PartitionKey, pk, false)
			if err != nil || len(rest) > 0 {
				return nil, store.Errorf(store.ErrStorageFault, "dynamo: list partitions of %s: malformed partition key", name)
			}
			if err := fn(p); err != nil {
				return nil, err
			}
			n++
			last = pk
		}
		if out.LastEvaluatedKey == nil {
			return nil, nil
		}
		// Every item read was of a partition handed out, the last one's
		// too: go on past it rather than through the rest of its rows.
		in.ExclusiveStartKey = out.LastEvaluatedKey
		if last != nil {
			in.ExclusiveStartKey = past(last)
		}
	}
}

// Interface check: the archive finds the lister through the wrappers.
var _ store.PartitionLister = (*Store)(nil)

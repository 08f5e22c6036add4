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

// maxScanBatch caps the items one Scan request asks for; the service's
// 1 MB page caps it as well.
const maxScanBatch = 10_000

// Partitions lists a table's partitions (store.PartitionLister) with
// strongly consistent Scan requests projecting the partition key alone.
// A Scan reads every item of the table, and DynamoDB charges its read
// units by the bytes read, not those returned, so listing a table costs
// about what reading it whole does (the archive reads it whole anyway).
// DynamoDB returns the items of one partition together, in sort key
// order, so a partition is handed out when its first item comes and the
// items after it with the same key are skipped. The page token is the
// encoded key of the last partition handed out: the next page's Scan
// starts after the largest sort key that partition could hold, so it is
// never listed twice. The SDK retries throttling inside each request, as
// for every other call, and Options.Timeout bounds one page.
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
	if after != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{attrPK: bytesAttr(after), attrSK: bytesAttr(afterPartition)}
	}
	// Ask for what is still needed plus one item, which tells whether a
	// next page exists; after requests full of the rows of partitions
	// already listed, ask for more at a time.
	batch := int32(min(limit+1, maxScanBatch))
	n := 0
	var last []byte
	for {
		if err := ctx.Err(); err != nil {
			return nil, s.tableErr(ctx, t, "list partitions of", err)
		}
		in.Limit = aws.Int32(batch)
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return nil, s.tableErr(ctx, t, "list partitions of", err)
		}
		repeats := 0
		for _, item := range out.Items {
			pk := bytesOf(item, attrPK)
			if last != nil && bytes.Equal(pk, last) {
				repeats++
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
		in.ExclusiveStartKey = out.LastEvaluatedKey
		batch = int32(min(limit-n+1, maxScanBatch))
		if repeats > 0 {
			batch = int32(min(int(batch)*4+repeats, maxScanBatch))
		}
	}
}

// Interface check: the archive finds the lister through the wrappers.
var _ store.PartitionLister = (*Store)(nil)

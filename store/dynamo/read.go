package dynamo

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/remote"
)

// Get reads one row with a strongly consistent GetItem; see store.Store.
func (s *Store) Get(ctx context.Context, name string, partition, clustering []any) (store.Row, error) {
	ctx, cancel, t, err := s.tables.Begin(ctx, name)
	if err != nil {
		return store.Row{}, err
	}
	defer cancel()
	p, pk, c, err := kit.ResolveRowKey(&t.spec, partition, clustering)
	if err != nil {
		return store.Row{}, err
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(t.physical),
		Key:            map[string]types.AttributeValue{attrPK: bytesAttr(pk), attrSK: bytesAttr(rowSK(kit.EncodeClustering(&t.spec, c)))},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return store.Row{}, s.tableErr(ctx, t, "get from", err)
	}
	if out.Item == nil {
		return store.Row{}, store.ErrNotFound
	}
	vals, marker, live, err := decodeItem(&t.spec, out.Item, s.now().UnixMilli())
	if err != nil {
		return store.Row{}, fmt.Errorf("get from %s: %w", name, err)
	}
	if !live {
		return store.Row{}, store.ErrNotFound
	}
	return store.Row{Partition: p, Clustering: c, Values: vals, ExpiresAt: marker}, nil
}

// query reads one partition with strongly consistent Query requests on the
// sort key range, in clustering order or reversed (ScanIndexForward=false),
// skipping expired rows and reading on until it has Limit live rows and
// knows whether a live row follows, as a page for Scan.
func (s *Store) query(ctx context.Context, name string, q store.Query) (store.Page, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return store.Page{}, err
	}
	defer cancel()
	if err := store.CheckLimit(q.Limit); err != nil {
		return store.Page{}, err
	}
	t, err := s.lookup(ctx, name)
	if err != nil {
		return store.Page{}, err
	}
	spec := &t.spec
	p, pk, err := kit.ResolvePartition(spec, q.Partition)
	if err != nil {
		return store.Page{}, err
	}
	kr, err := kit.ClusteringRange(spec, &q)
	if err != nil {
		return store.Page{}, err
	}
	// Rows live in the sort key space 0x01; an open end stops at 0x02. The
	// range end is exclusive, BETWEEN is not: an item exactly at the end is
	// skipped below.
	lo := rowSK(kr.Start)
	hi := []byte{spaceRow + 1}
	if kr.End != nil {
		hi = rowSK(kr.End)
	}
	var page store.Page
	if kr.Empty || bytes.Compare(lo, hi) >= 0 {
		return page, nil
	}
	now := s.now().UnixMilli()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(t.physical),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": bytesAttr(pk), ":lo": bytesAttr(lo), ":hi": bytesAttr(hi)},
		ScanIndexForward:          aws.Bool(!q.Reverse),
		ConsistentRead:            aws.Bool(true),
	}
	// Ask for what is still needed plus one (the look-ahead); after pages
	// full of expired rows, ask for more at a time.
	batch := int32(min(q.Limit+1, 1000))
	for {
		// Each request honours ctx too; looking first spares the request
		// a read whose client has gone would still send.
		if err := ctx.Err(); err != nil {
			return store.Page{}, s.tableErr(ctx, t, "query", err)
		}
		in.Limit = aws.Int32(batch)
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return store.Page{}, s.tableErr(ctx, t, "query", err)
		}
		expired := 0
		for _, item := range out.Items {
			sk := bytesOf(item, attrSK)
			if bytes.Equal(sk, hi) || len(sk) == 0 || sk[0] != spaceRow {
				continue
			}
			vals, marker, live, err := decodeItem(spec, item, now)
			if err != nil {
				return store.Page{}, fmt.Errorf("query %s: %w", name, err)
			}
			if !live {
				expired++
				continue
			}
			if len(page.Rows) == q.Limit {
				// A live row follows the full page: hand out a token.
				last := page.Rows[len(page.Rows)-1]
				page.NextPageToken = kit.EncodeClustering(spec, last.Clustering)
				return page, nil
			}
			ck, err := store.DecodeClustering(spec, sk[1:])
			if err != nil {
				return store.Page{}, fmt.Errorf("query %s: %w", name, err)
			}
			page.Rows = append(page.Rows, store.Row{Partition: p, Clustering: ck, Values: vals, ExpiresAt: marker})
		}
		if out.LastEvaluatedKey == nil {
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		batch = int32(min(q.Limit-len(page.Rows)+1, 1000))
		if expired > 0 {
			batch = int32(min(int(batch)*4, 1000))
		}
	}
}

// QueryIndex queries the ebb index's local secondary index (strongly
// consistent) by the value's digest and keeps the entries whose value is
// still live and equal; see store.Store.
func (s *Store) QueryIndex(ctx context.Context, name, index string, partition []any, value any) ([][]any, error) {
	ctx, cancel, t, err := s.tables.Begin(ctx, name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	spec := &t.spec
	col, v, pk, err := kit.ResolveIndexLookup(spec, index, partition, value)
	if err != nil {
		return nil, err
	}
	want := encodeValue(v)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(t.physical),
		IndexName:                 aws.String(lsiName(index)),
		KeyConditionExpression:    aws.String("#pk = :pk AND #ix = :ix"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#ix": iName(col)},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": bytesAttr(pk), ":ix": bytesAttr(indexKey(v))},
		ConsistentRead:            aws.Bool(true),
	}
	now := s.now().UnixMilli()
	var sks [][]byte
	for {
		if err := ctx.Err(); err != nil {
			return nil, s.tableErr(ctx, t, "query index of", err)
		}
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, s.tableErr(ctx, t, "query index of", err)
		}
		for _, item := range out.Items {
			if e, ok := numOf(item, eName(col)); !ok || !liveAt(e, now) {
				continue
			}
			if !sameValue(item[vName(col)], want) {
				continue
			}
			if sk := bytesOf(item, attrSK); len(sk) > 0 && sk[0] == spaceRow {
				sks = append(sks, sk)
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	// Entries come in digest order; the contract wants clustering order,
	// which is the byte order of the sort keys.
	slices.SortFunc(sks, bytes.Compare)
	keys := make([][]any, 0, len(sks))
	for _, sk := range sks {
		ck, err := store.DecodeClustering(spec, sk[1:])
		if err != nil {
			return nil, fmt.Errorf("query index of %s: %w", name, err)
		}
		keys = append(keys, ck)
	}
	return keys, nil
}

func sameValue(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(x.Value, y.Value)
	}
	return false
}

// DeletePartition reads the keys of every item of the partition and deletes
// them in BatchWriteItem chunks; see store.Store.
func (s *Store) DeletePartition(ctx context.Context, name string, partition []any) error {
	ctx, cancel, t, err := s.tables.Begin(ctx, name)
	if err != nil {
		return err
	}
	defer cancel()
	_, pk, err := kit.ResolvePartition(&t.spec, partition)
	if err != nil {
		return err
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(t.physical),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ProjectionExpression:      aws.String("#pk, #sk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": bytesAttr(pk)},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		if err := ctx.Err(); err != nil {
			return s.tableErr(ctx, t, "delete partition in", err)
		}
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return s.tableErr(ctx, t, "delete partition in", err)
		}
		var tasks []func(context.Context) error
		for chunk := range slices.Chunk(out.Items, batchWriteItems) {
			reqs := make([]types.WriteRequest, len(chunk))
			for i, item := range chunk {
				reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item}}
			}
			tasks = append(tasks, func(ctx context.Context) error {
				return s.retry.writeBatch(ctx, s.sendBatch(t), map[string][]types.WriteRequest{t.physical: reqs})
			})
		}
		if len(tasks) > 0 {
			if err := remote.RunAll(ctx, tasks); err != nil {
				return s.tableErr(ctx, t, "delete partition in", err)
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// statsScanItems bounds the scan Stats does to count small tables.
const statsScanItems = 10000

// Stats counts a small table's items with a scan (expired rows included, as
// on the embedded backend); a table larger than that reports DynamoDB's
// DescribeTable figures, which the service refreshes about every six hours.
// Either way the figures are estimates; see store.Store.
func (s *Store) Stats(ctx context.Context, name string) (store.TableStats, error) {
	ctx, cancel, t, err := s.tables.Begin(ctx, name)
	if err != nil {
		return store.TableStats{}, err
	}
	defer cancel()
	var st store.TableStats
	in := &dynamodb.ScanInput{TableName: aws.String(t.physical), ConsistentRead: aws.Bool(true)}
	for {
		if err := ctx.Err(); err != nil {
			return store.TableStats{}, s.tableErr(ctx, t, "stats of", err)
		}
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return store.TableStats{}, s.tableErr(ctx, t, "stats of", err)
		}
		for _, item := range out.Items {
			st.Rows++
			st.Bytes += int64(itemSize(item))
		}
		if out.LastEvaluatedKey == nil {
			return st, nil
		}
		if st.Rows >= statsScanItems {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	d, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.physical)})
	if err != nil {
		return store.TableStats{}, s.tableErr(ctx, t, "stats of", err)
	}
	return store.TableStats{Rows: aws.ToInt64(d.Table.ItemCount), Bytes: aws.ToInt64(d.Table.TableSizeBytes)}, nil
}

// Scan hands out a page read by query row by row; see store.Store. It
// converts the page with the cached spec.
func (s *Store) Scan(ctx context.Context, name string, q store.Query, fn func(*store.RawRow) error) ([]byte, error) {
	page, err := s.query(ctx, name, q)
	if err != nil {
		return nil, err
	}
	t, err := s.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	return kit.ScanPage(ctx, &t.spec, page, fn, q.Tally)
}

// Package dynamolegacy is the DynamoDB legacy source of package migrate:
// an existing table that already holds an index's events and expires them
// by native TTL, read (and, when asked, written) through a mapping of its
// key and attribute names onto the index's fields.
package dynamolegacy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
)

// Source is a DynamoDB legacy table.
type Source struct {
	client *dynamodb.Client
	table  string
	m      migrate.Mapping
	// Wait pauses between retries of unprocessed batch writes; nil waits
	// on a timer.
	wait func(ctx context.Context, d time.Duration) error
}

var _ migrate.Source = (*Source)(nil)

// Open returns the legacy table cfg names, reached through client, after
// checking that it exists and that its key schema is the mapping's.
func Open(ctx context.Context, client *dynamodb.Client, cfg migrate.LegacyConfig) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Kind != migrate.KindDynamoDB {
		return nil, store.Errorf(store.ErrInvalid, "kind %q", cfg.Kind)
	}
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.Table)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil, store.Errorf(store.ErrInvalid, "table %q does not exist", cfg.Table)
		}
		return nil, mapErr(ctx, "dynamolegacy: describe "+cfg.Table, err)
	}
	m := *cfg.Mapping
	want := map[types.KeyType]string{types.KeyTypeHash: m.IndexID, types.KeyTypeRange: m.SortKey}
	for _, k := range out.Table.KeySchema {
		if want[k.KeyType] != aws.ToString(k.AttributeName) {
			return nil, store.Errorf(store.ErrInvalid, "table %s has %s key %q; the mapping says %q", cfg.Table, k.KeyType, aws.ToString(k.AttributeName), want[k.KeyType])
		}
		delete(want, k.KeyType)
	}
	if len(want) != 0 {
		return nil, store.Errorf(store.ErrInvalid, "table %s needs a partition and a sort key", cfg.Table)
	}
	return &Source{client: client, table: cfg.Table, m: m}, nil
}

// Sort keys.

const tsDigits = 13 // Unix ms up to the year 2286

func (s *Source) sortKey(tsMs int64, eventID string) types.AttributeValue {
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(tsMs, 10)}
	}
	return &types.AttributeValueMemberS{Value: fmt.Sprintf("%0*d#%s", tsDigits, tsMs, eventID)}
}

// maxStringMs is the largest timestamp a string sort key holds in
// tsDigits.
const maxStringMs = 9_999_999_999_999

// bound is the sort-key value of a range bound at tsMs: for the string
// format, "<ts>" sorts before every "<ts>#<event>", and a bound past what
// 13 digits hold is held to them (a longer number would sort by its
// digits, before later 13-digit ones).
func (s *Source) bound(tsMs int64) types.AttributeValue {
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(tsMs, 10)}
	}
	return &types.AttributeValueMemberS{Value: fmt.Sprintf("%0*d", tsDigits, min(tsMs, maxStringMs))}
}

// row decodes an item; ok is false for an item the mapping cannot read
// (counted by the caller as a row ebb cannot index).
func (s *Source) row(item map[string]types.AttributeValue) (migrate.Row, bool) {
	var r migrate.Row
	id, ok := item[s.m.IndexID].(*types.AttributeValueMemberS)
	if !ok {
		return r, false
	}
	r.IndexID = id.Value
	switch sk := item[s.m.SortKey].(type) {
	case *types.AttributeValueMemberN:
		ms, err := strconv.ParseInt(sk.Value, 10, 64)
		if err != nil {
			return r, false
		}
		r.Timestamp = time.UnixMilli(ms).UTC()
		ev, ok := item[s.m.EventID].(*types.AttributeValueMemberS)
		if !ok {
			return r, false
		}
		r.EventID = ev.Value
	case *types.AttributeValueMemberS:
		tsPart, ev, ok := strings.Cut(sk.Value, "#")
		ms, err := strconv.ParseInt(tsPart, 10, 64)
		if !ok || err != nil {
			return r, false
		}
		r.Timestamp, r.EventID = time.UnixMilli(ms).UTC(), ev
	default:
		return r, false
	}
	switch p := item[s.m.Payload].(type) {
	case *types.AttributeValueMemberB:
		r.Payload = p.Value
	case *types.AttributeValueMemberS:
		r.Payload = []byte(p.Value)
	}
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	if ttl, ok := item[s.m.TTL].(*types.AttributeValueMemberN); ok {
		if sec, err := strconv.ParseFloat(ttl.Value, 64); err == nil {
			r.ExpiresAt = time.UnixMilli(int64(sec * 1000)).UTC()
		}
	}
	return r, true
}

func (s *Source) item(r migrate.Row) map[string]types.AttributeValue {
	ms := r.Timestamp.UnixMilli()
	item := map[string]types.AttributeValue{
		s.m.IndexID: &types.AttributeValueMemberS{Value: r.IndexID},
		s.m.SortKey: s.sortKey(ms, r.EventID),
		s.m.Payload: &types.AttributeValueMemberB{Value: append([]byte{}, r.Payload...)},
	}
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		item[s.m.EventID] = &types.AttributeValueMemberS{Value: r.EventID}
	}
	if !r.ExpiresAt.IsZero() {
		// Native TTL is in whole seconds; rounding up never expires a row
		// early.
		sec := (r.ExpiresAt.UnixMilli() + 999) / 1000
		item[s.m.TTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(sec, 10)}
	}
	return item
}

// Query reads one index_id's live events, filtering out items whose TTL
// has passed (DynamoDB keeps them for days); see migrate.Source.
func (s *Source) Query(ctx context.Context, r migrate.Range, now time.Time) ([]migrate.Row, bool, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#p = :p AND #s BETWEEN :lo AND :hi"),
		ExpressionAttributeNames:  map[string]string{"#p": s.m.IndexID, "#s": s.m.SortKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: r.IndexID}, ":lo": s.bound(r.Lo)},
		ScanIndexForward:          aws.Bool(!r.Desc),
		ConsistentRead:            aws.Bool(true),
	}
	if s.m.SortKeyFormat == migrate.SortTimestampMs {
		in.ExpressionAttributeValues[":hi"] = s.bound(r.Hi - 1)
	} else {
		in.ExpressionAttributeValues[":hi"] = s.bound(r.Hi) // "<hi>" is before every "<hi>#..."
	}
	if a := r.After; a != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			s.m.IndexID: &types.AttributeValueMemberS{Value: r.IndexID},
			s.m.SortKey: s.sortKey(a.Timestamp.UnixMilli(), a.EventID),
		}
	}
	var rows []migrate.Row
	for {
		// One more than asked tells whether more follow.
		in.Limit = aws.Int32(int32(min(r.Limit+1-len(rows), 1000)))
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, false, mapErr(ctx, "dynamolegacy: query "+s.table, err)
		}
		for _, item := range out.Items {
			row, ok := s.row(item)
			if !ok || (!row.ExpiresAt.IsZero() && !row.ExpiresAt.After(now)) {
				continue
			}
			if len(rows) == r.Limit {
				return rows, true, nil
			}
			rows = append(rows, row)
		}
		if out.LastEvaluatedKey == nil {
			return rows, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Write puts rows in batches of 25, retrying unprocessed items.
func (s *Source) Write(ctx context.Context, rows []migrate.Row) error {
	for lo := 0; lo < len(rows); lo += 25 {
		// One item per key in a batch: a later row of the same key wins.
		reqs := map[string]types.WriteRequest{}
		var order []string
		for _, r := range rows[lo:min(lo+25, len(rows))] {
			k := fmt.Sprintf("%s\x00%d\x00%s", r.IndexID, r.Timestamp.UnixMilli(), r.EventID)
			if _, ok := reqs[k]; !ok {
				order = append(order, k)
			}
			reqs[k] = types.WriteRequest{PutRequest: &types.PutRequest{Item: s.item(r)}}
		}
		batch := make([]types.WriteRequest, 0, len(order))
		for _, k := range order {
			batch = append(batch, reqs[k])
		}
		for attempt := 0; len(batch) > 0; attempt++ {
			out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{s.table: batch}})
			if err != nil {
				return mapErr(ctx, "dynamolegacy: write "+s.table, err)
			}
			batch = out.UnprocessedItems[s.table]
			if len(batch) > 0 {
				if attempt >= 8 {
					return fmt.Errorf("dynamolegacy: write %s: %d items still unprocessed: %w", s.table, len(batch), store.ErrThrottled)
				}
				if err := s.pause(ctx, time.Duration(1<<attempt)*20*time.Millisecond); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Source) pause(ctx context.Context, d time.Duration) error {
	if s.wait != nil {
		return s.wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Scan pages through the table; the cursor is DynamoDB's
// LastEvaluatedKey, kept as JSON. Items the mapping cannot read are
// returned with an empty index id, for the backfill to count.
func (s *Source) Scan(ctx context.Context, cursor []byte, limit int) ([]migrate.Row, []byte, float64, error) {
	in := &dynamodb.ScanInput{
		TableName:              aws.String(s.table),
		Limit:                  aws.Int32(int32(limit)),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		ConsistentRead:         aws.Bool(true),
	}
	if len(cursor) > 0 {
		key, err := decodeKey(cursor)
		if err != nil {
			return nil, nil, 0, err
		}
		in.ExclusiveStartKey = key
	}
	out, err := s.client.Scan(ctx, in)
	if err != nil {
		return nil, nil, 0, mapErr(ctx, "dynamolegacy: scan "+s.table, err)
	}
	rows := make([]migrate.Row, 0, len(out.Items))
	for _, item := range out.Items {
		r, _ := s.row(item)
		rows = append(rows, r)
	}
	var units float64
	if c := out.ConsumedCapacity; c != nil && c.CapacityUnits != nil {
		units = *c.CapacityUnits
	} else {
		// Where the endpoint reports none: a strongly consistent read is
		// one unit per 4 KB; count one per item at least.
		units = float64(len(out.Items))
	}
	var next []byte
	if out.LastEvaluatedKey != nil {
		if next, err = encodeKey(out.LastEvaluatedKey); err != nil {
			return nil, nil, 0, err
		}
	}
	return rows, next, units, nil
}

// Estimate returns DynamoDB's item count (refreshed by DynamoDB about
// every six hours).
func (s *Source) Estimate(ctx context.Context) (int64, error) {
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)})
	if err != nil {
		return 0, mapErr(ctx, "dynamolegacy: describe "+s.table, err)
	}
	return aws.ToInt64(out.Table.ItemCount), nil
}

// keyAttr is one key attribute of a scan cursor.
type keyAttr struct {
	S *string `json:"S,omitempty"`
	N *string `json:"N,omitempty"`
	B []byte  `json:"B,omitempty"`
}

func encodeKey(key map[string]types.AttributeValue) ([]byte, error) {
	out := map[string]keyAttr{}
	for k, v := range key {
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = keyAttr{S: aws.String(x.Value)}
		case *types.AttributeValueMemberN:
			out[k] = keyAttr{N: aws.String(x.Value)}
		case *types.AttributeValueMemberB:
			out[k] = keyAttr{B: x.Value}
		default:
			return nil, fmt.Errorf("dynamolegacy: key attribute %s of type %T", k, v)
		}
	}
	return json.Marshal(out)
}

func decodeKey(b []byte) (map[string]types.AttributeValue, error) {
	var in map[string]keyAttr
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, store.Errorf(store.ErrInvalid, "malformed scan cursor: %v", err)
	}
	out := map[string]types.AttributeValue{}
	for k, v := range in {
		switch {
		case v.S != nil:
			out[k] = &types.AttributeValueMemberS{Value: *v.S}
		case v.N != nil:
			out[k] = &types.AttributeValueMemberN{Value: *v.N}
		default:
			out[k] = &types.AttributeValueMemberB{Value: v.B}
		}
	}
	return out, nil
}

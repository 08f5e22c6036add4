package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/remote"
)

// Write validates the whole batch, folds it per row (see fold.go) and sends
// it: as one TransactWriteItems when the endpoint has transactions and the
// batch is a single-partition batch of at most 100 mutations, else as
// BatchWriteItem chunks of 25 (whole-item puts and deletes) plus single
// UpdateItem / conditional DeleteItem calls; see store.Store.
func (s *Store) Write(ctx context.Context, name string, batch []store.Mutation) error {
	ctx, cancel, done, err := s.core.BeginWrite(ctx, len(batch))
	if done || err != nil {
		return err
	}
	defer cancel()
	now := s.now()
	t, rs, err := remote.Resolve(ctx, s.tables, name, batch, now, s.caps.MaxRowBytes)
	if err != nil {
		return err
	}
	phases, err := fold(&t.spec, rs, now.UnixMilli(), s.opts.TTLMargin.Milliseconds())
	if err != nil {
		return err
	}
	if len(rs) == 1 && rs[0].Cond != nil {
		// ResolveBatch keeps a conditional mutation alone in its batch,
		// so it folds into exactly one op.
		if err := s.conditional(ctx, t, phases[0][0], rs[0].Cond); err != nil {
			return s.tableErr(ctx, t, "write", err)
		}
		return nil
	}
	if s.atomic(rs, phases) {
		if err := s.transact(ctx, t, phases[0]); err != nil {
			return s.tableErr(ctx, t, "write", err)
		}
		return nil
	}
	for _, ph := range phases {
		if err := s.applyPhase(ctx, t, ph); err != nil {
			return s.tableErr(ctx, t, "write", err)
		}
	}
	return nil
}

// atomic reports whether a batch goes through TransactWriteItems: the
// endpoint has it, the batch is a single-partition batch within the limit,
// folds into one phase of more than one operation and fits the 4 MB
// transaction size. A single operation on one item is atomic by itself.
func (s *Store) atomic(rs []kit.ResolvedMutation, phases []phase) bool {
	if !s.caps.AtomicPartitionBatch || len(rs) > s.caps.MaxAtomicBatch || len(phases) != 1 || len(phases[0]) < 2 {
		return false
	}
	size := 0
	for i := range rs {
		if string(rs[i].PartitionKey) != string(rs[0].PartitionKey) {
			return false
		}
		size += rs[i].Size
	}
	return size < maxTransactBytes-64<<10
}

// applyPhase sends one phase: puts and deletes in BatchWriteItem chunks,
// the rest as single calls, with at most remote.Parallelism requests in flight.
func (s *Store) applyPhase(ctx context.Context, t *table, ph phase) error {
	var reqs []types.WriteRequest
	var singles []*op
	for _, o := range ph {
		switch o.kind {
		case opPut:
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: o.item}})
		case opDelete:
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: o.key()}})
		default:
			singles = append(singles, o)
		}
	}
	var tasks []func(context.Context) error
	for chunk := range slices.Chunk(reqs, batchWriteItems) {
		if len(chunk) == 1 {
			// One request: PutItem/DeleteItem costs the same and reports
			// errors directly.
			tasks = append(tasks, func(ctx context.Context) error { return s.writeOne(ctx, t, chunk[0]) })
			continue
		}
		tasks = append(tasks, func(ctx context.Context) error {
			return s.retry.writeBatch(ctx, s.sendBatch(t), map[string][]types.WriteRequest{t.physical: chunk})
		})
	}
	for _, o := range singles {
		tasks = append(tasks, func(ctx context.Context) error {
			if o.kind == opUpdate {
				return s.update(ctx, t, o, nil, nil)
			}
			return s.deleteIfExpired(ctx, t, o)
		})
	}
	return remote.RunAll(ctx, tasks)
}

// sendBatch is the batchSender for one table.
func (s *Store) sendBatch(t *table) batchSender {
	return func(ctx context.Context, reqs map[string][]types.WriteRequest) (map[string][]types.WriteRequest, error) {
		out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: reqs})
		if err != nil {
			return nil, err
		}
		return out.UnprocessedItems, nil
	}
}

func (s *Store) writeOne(ctx context.Context, t *table, r types.WriteRequest) error {
	var err error
	if r.PutRequest != nil {
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(t.physical), Item: r.PutRequest.Item})
	} else {
		_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(t.physical), Key: r.DeleteRequest.Key})
	}
	return err
}

// exprBuilder collects placeholder names and values for one expression.
type exprBuilder struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *exprBuilder {
	return &exprBuilder{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name returns the placeholder for an attribute name. Placeholders keep
// reserved words ("ttl") out of expressions.
func (b *exprBuilder) name(attr string) string {
	p := "#" + attr
	b.names[p] = attr
	return p
}

func (b *exprBuilder) value(v types.AttributeValue) string {
	p := fmt.Sprintf(":%d", len(b.values))
	b.values[p] = v
	return p
}

func (b *exprBuilder) valueMap() map[string]types.AttributeValue {
	if len(b.values) == 0 {
		return nil
	}
	return b.values
}

// updateExpr builds the SET/REMOVE expression of an update, plus the TTL
// clause given by ttl: "" leaves the TTL attribute alone, "remove" removes
// it, anything else is a value placeholder to set it to.
func updateExpr(b *exprBuilder, o *op, ttl string) string {
	var sets, removes []string
	for _, attr := range slices.Sorted(maps.Keys(o.set)) {
		sets = append(sets, b.name(attr)+" = "+b.value(o.set[attr]))
	}
	for _, attr := range slices.Sorted(maps.Keys(o.remove)) {
		removes = append(removes, b.name(attr))
	}
	switch ttl {
	case "":
	case "remove":
		removes = append(removes, b.name(attrTTL))
	default:
		sets = append(sets, b.name(attrTTL)+" = "+ttl)
	}
	var parts []string
	if len(sets) > 0 {
		parts = append(parts, "SET "+strings.Join(sets, ", "))
	}
	if len(removes) > 0 {
		parts = append(parts, "REMOVE "+strings.Join(removes, ", "))
	}
	return strings.Join(parts, " ")
}

// update sends a folded partial write. The native TTL attribute must stay at
// or after the expiry of every live part of the row, but an update does not
// know the cells it leaves alone; so it raises the TTL with a conditional
// write, and when the stored TTL is already later (or absent: some part
// never expires) it writes again leaving the TTL alone. The two conditions
// are complementary, so one of them holds unless a concurrent write slips
// in between; then it tries again.
//
// cond, when not nil, is the caller's condition (Mutation.If), joined to
// every request. When both TTL branches are refused, holds re-checks it
// with a consistent read: if it does not hold, the refusal was the caller's
// condition and update returns the service's ConditionalCheckFailed error.
func (s *Store) update(ctx context.Context, t *table, o *op, cond func(*exprBuilder) string,
	holds func(context.Context) (bool, error)) error {
	send := func(ttl func(b *exprBuilder) (string, string)) error {
		b := newExpr()
		var conds []string
		if cond != nil {
			conds = append(conds, cond(b))
		}
		tv, tc := ttl(b)
		if tc != "" {
			conds = append(conds, "("+tc+")")
		}
		in := &dynamodb.UpdateItemInput{
			TableName:        aws.String(t.physical),
			Key:              o.key(),
			UpdateExpression: aws.String(updateExpr(b, o, tv)),
		}
		if len(conds) > 0 {
			in.ConditionExpression = aws.String(strings.Join(conds, " AND "))
		}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = b.names, b.valueMap()
		_, err := s.client.UpdateItem(ctx, in)
		return err
	}
	switch {
	case !o.marker:
		// Only cell deletions: the remaining parts' expiries only shrink.
		return send(func(*exprBuilder) (string, string) { return "", "" })
	case o.neverExpires:
		return send(func(*exprBuilder) (string, string) { return "remove", "" })
	}
	sec := numAttr(ttlSeconds(o.maxExp, s.opts.TTLMargin.Milliseconds()))
	raise := func(b *exprBuilder) (string, string) {
		v := b.value(sec)
		return v, fmt.Sprintf("attribute_not_exists(%s) OR %s < %s", b.name(attrPK), b.name(attrTTL), v)
	}
	keep := func(b *exprBuilder) (string, string) {
		v := b.value(sec)
		return "", fmt.Sprintf("attribute_exists(%s) AND (attribute_not_exists(%s) OR %s >= %s)",
			b.name(attrPK), b.name(attrTTL), b.name(attrTTL), v)
	}
	const rounds = 8
	for range rounds {
		err := send(raise)
		if !isConditionFailed(err) {
			return err
		}
		if err = send(keep); !isConditionFailed(err) {
			return err
		}
		if holds != nil {
			ok, herr := holds(ctx)
			if herr != nil {
				return herr
			}
			if !ok {
				return err
			}
		}
	}
	return store.Errorf(store.ErrUnavailable, "the row changed under each of %d updates", 2*rounds)
}

// deleteCondition is DeleteIfExpired's condition: the marker and every cell
// are absent or expired at now.
func deleteCondition(b *exprBuilder, spec *store.TableSpec, now int64) string {
	n := b.value(numAttr(now))
	conds := []string{fmt.Sprintf("(attribute_not_exists(%s) OR %s <= %s)", b.name(attrMarker), b.name(attrMarker), n)}
	for i := range spec.Values {
		e := b.name(eName(i))
		conds = append(conds, fmt.Sprintf("(attribute_not_exists(%s) OR %s <= %s)", e, e, n))
	}
	return strings.Join(conds, " AND ")
}

// deleteIfExpired deletes a row only if nothing of it is live when the
// service applies the delete; a failed condition means the row was extended
// and survives, which is not an error.
func (s *Store) deleteIfExpired(ctx context.Context, t *table, o *op) error {
	b := newExpr()
	cond := deleteCondition(b, &t.spec, s.now().UnixMilli())
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(t.physical),
		Key:                       o.key(),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  b.names,
		ExpressionAttributeValues: b.valueMap(),
	})
	if isConditionFailed(err) {
		return nil
	}
	return err
}

// transact applies one phase as a single TransactWriteItems. A
// DeleteIfExpired whose row turns out to be live cancels the transaction;
// it is then dropped (it would have been a no-op) and the rest sent again.
// Conflicts with other transactions are retried under the retry policy.
func (s *Store) transact(ctx context.Context, t *table, ph phase) error {
	ops := slices.Clone(ph)
	for attempt := 1; ; attempt++ {
		if len(ops) == 0 {
			return nil
		}
		items := make([]types.TransactWriteItem, len(ops))
		now := s.now().UnixMilli()
		for i, o := range ops {
			items[i] = s.transactItem(t, o, now)
		}
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return err
		}
		var keep []*op
		retryable := true
		for i, reason := range tce.CancellationReasons {
			code := aws.ToString(reason.Code)
			switch {
			case i >= len(ops):
			case code == "ConditionalCheckFailed" && ops[i].kind == opDeleteIfExpired:
				continue // the row is live: this delete is a no-op
			case code == "" || code == "None" || code == "TransactionConflict" || code == "ThrottlingError" ||
				code == "ProvisionedThroughputExceeded":
			case code == "ItemCollectionSizeLimitExceeded":
				return store.Wrapf(store.ErrTooLarge, err, "the partition's item collection exceeds the backend's size limit")
			case code == "ValidationError" && isSizeMessage(aws.ToString(reason.Message)):
				return store.Wrapf(store.ErrTooLarge, err, "%s", aws.ToString(reason.Message))
			case code == "ValidationError":
				return store.Wrapf(store.ErrInvalid, err, "%s", aws.ToString(reason.Message))
			default:
				retryable = false
			}
			if i < len(ops) {
				keep = append(keep, ops[i])
			}
		}
		if !retryable {
			return err
		}
		dropped := len(keep) < len(ops)
		ops = keep
		if dropped {
			continue // not a conflict: resend at once
		}
		if attempt >= s.retry.Attempts {
			return store.Wrapf(store.ErrThrottled, err, "transaction cancelled %d times", attempt)
		}
		if err := s.retry.Wait(ctx, attempt); err != nil {
			return err
		}
	}
}

// transactItem is one op as a transaction action. An update in a
// transaction cannot use the two-step TTL raise of update, so it removes the
// TTL attribute: the backstop then waits for the next whole-row write,
// which never deletes live data.
func (s *Store) transactItem(t *table, o *op, now int64) types.TransactWriteItem {
	tn := aws.String(t.physical)
	switch o.kind {
	case opPut:
		return types.TransactWriteItem{Put: &types.Put{TableName: tn, Item: o.item}}
	case opDelete:
		return types.TransactWriteItem{Delete: &types.Delete{TableName: tn, Key: o.key()}}
	case opDeleteIfExpired:
		b := newExpr()
		cond := deleteCondition(b, &t.spec, now)
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: tn, Key: o.key(), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: b.names, ExpressionAttributeValues: b.valueMap(),
		}}
	}
	b := newExpr()
	ttl := ""
	if o.marker {
		ttl = "remove"
	}
	expr := updateExpr(b, o, ttl)
	return types.TransactWriteItem{Update: &types.Update{
		TableName: tn, Key: o.key(), UpdateExpression: aws.String(expr),
		ExpressionAttributeNames: b.names, ExpressionAttributeValues: b.valueMap(),
	}}
}

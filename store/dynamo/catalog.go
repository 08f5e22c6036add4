package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// The catalog is a small table, {prefix}ebb.catalog, holding one document per
// ebb table: its TableSpec as JSON, its last capacity setting, its
// history of provisioned -> on-demand switches, and its table class with
// the history of class changes. DynamoDB keeps no schema
// beyond the keys, so this is how any process pointed at the same endpoint
// recovers a table's spec. The '.' in its name keeps it apart from every
// ebb table name. Specs are cached in memory; a table found missing on the
// service is evicted from the cache.

const (
	catalogKey  = "k"
	attrSpec    = "spec"
	attrCap     = "cap"
	attrHistory = "switches"
)

func catalogID(name string) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: "t." + name}
}

// ensureCatalog creates the catalog table if needed and waits for it.
func (s *Store) ensureCatalog(ctx context.Context) error {
	_, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.catalog)})
	if err == nil {
		return s.waitTable(ctx, s.catalog, false)
	}
	if !isNotFound(err) {
		return mapErr(ctx, "dynamo: describe catalog", err)
	}
	_, err = s.client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(s.catalog),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(catalogKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(catalogKey), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil && !isInUse(err) {
		return mapErr(ctx, "dynamo: create catalog", err)
	}
	return s.waitTable(ctx, s.catalog, false)
}

// entry is one catalog document.
type entry struct {
	spec     store.TableSpec
	capacity store.Capacity
	switches []int64 // Unix ms of provisioned -> on-demand switches
	// class is the table's class as last set through ebb ("" when never
	// set: the default class), classChanges the Unix ms of those changes.
	class        store.TableClass
	classChanges []int64
}

func decodeEntry(item map[string]types.AttributeValue) (entry, error) {
	var e entry
	sv, ok := item[attrSpec].(*types.AttributeValueMemberS)
	if !ok {
		return e, fmt.Errorf("dynamo: catalog entry without a spec")
	}
	if err := json.Unmarshal([]byte(sv.Value), &e.spec); err != nil {
		return e, fmt.Errorf("dynamo: catalog spec: %w", err)
	}
	if cv, ok := item[attrCap].(*types.AttributeValueMemberS); ok {
		if err := json.Unmarshal([]byte(cv.Value), &e.capacity); err != nil {
			return e, fmt.Errorf("dynamo: catalog capacity: %w", err)
		}
	}
	if hv, ok := item[attrHistory].(*types.AttributeValueMemberS); ok {
		if err := json.Unmarshal([]byte(hv.Value), &e.switches); err != nil {
			return e, fmt.Errorf("dynamo: catalog history: %w", err)
		}
	}
	if cv, ok := item[attrClass].(*types.AttributeValueMemberS); ok {
		e.class = store.TableClass(cv.Value)
	}
	if hv, ok := item[attrClassHistory].(*types.AttributeValueMemberS); ok {
		if err := json.Unmarshal([]byte(hv.Value), &e.classChanges); err != nil {
			return e, fmt.Errorf("dynamo: catalog class history: %w", err)
		}
	}
	return e, nil
}

func specAttr(spec store.TableSpec) types.AttributeValue {
	b, _ := json.Marshal(spec) // a TableSpec always marshals
	return &types.AttributeValueMemberS{Value: string(b)}
}

// readEntry reads a table's catalog document; ErrTableNotFound if none.
func (s *Store) readEntry(ctx context.Context, name string) (entry, map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.catalog),
		Key:            map[string]types.AttributeValue{catalogKey: catalogID(name)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return entry{}, nil, mapErr(ctx, "read catalog", err)
	}
	if out.Item == nil {
		return entry{}, nil, store.Errorf(store.ErrTableNotFound, "%q", name)
	}
	e, err := decodeEntry(out.Item)
	return e, out.Item, err
}

// lookup returns a table's cached spec and physical name, reading the
// catalog on a miss (remote.Tables).
func (s *Store) lookup(ctx context.Context, name string) (*table, error) {
	return s.tables.Lookup(ctx, name)
}

// loadTable is the cache's read of a catalog document.
func (s *Store) loadTable(ctx context.Context, name string) (*table, error) {
	e, _, err := s.readEntry(ctx, name)
	if err != nil {
		return nil, err
	}
	return &table{spec: e.spec, physical: s.physicalName(name)}, nil
}

// Spec returns a table's spec from the spec cache, reading the catalog on
// a miss; see store.Catalog.
func (s *Store) Spec(ctx context.Context, name string) (store.TableSpec, error) {
	return remote.Spec(ctx, s.tables, name)
}

// tableErr maps an error from an operation on table t, evicting the cached
// spec when the service says the table is gone.
func (s *Store) tableErr(ctx context.Context, t *table, op string, err error) error {
	return s.tables.Err(ctx, t.spec.Name, op, err)
}

// CreateTable records the spec in the catalog, creates the DynamoDB table
// (keys pk and sk, one local secondary index per ebb index, on-demand
// billing), waits until it is ACTIVE and switches native TTL on where the
// endpoint has it; see store.Store.
func (s *Store) CreateTable(ctx context.Context, spec store.TableSpec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if len(spec.Indexes) > 5 {
		return store.Errorf(store.ErrInvalid, "table %q: DynamoDB allows at most 5 local secondary indexes", spec.Name)
	}
	ctx, cancel, err := s.beginTable(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	physical := s.physicalName(spec.Name)
	if err := s.claimName(ctx, spec, physical); err != nil {
		return err
	}
	if err := s.createPhysical(ctx, spec, physical); err != nil {
		return err
	}
	s.tables.Put(spec.Name, &table{spec: spec, physical: physical})
	return nil
}

// claimName writes the spec into the catalog unless an entry with another
// spec exists for a table that still exists (ErrTableExists). A left-over
// entry without its table (a create or drop interrupted half-way) is
// replaced.
func (s *Store) claimName(ctx context.Context, spec store.TableSpec, physical string) error {
	for range 3 {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                aws.String(s.catalog),
			Item:                     map[string]types.AttributeValue{catalogKey: catalogID(spec.Name), attrSpec: specAttr(spec)},
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": catalogKey},
		})
		if err == nil {
			return nil
		}
		if !isConditionFailed(err) {
			return mapErr(ctx, "create "+spec.Name, err)
		}
		old, oldItem, err := s.readEntry(ctx, spec.Name)
		if err != nil {
			continue // dropped meanwhile: try again
		}
		if old.spec.Equal(spec) {
			return nil
		}
		exists, err := s.physicalExists(ctx, physical)
		if err != nil {
			return err
		}
		if exists {
			return store.Errorf(store.ErrTableExists, "%q", spec.Name)
		}
		// Stale entry: replace it only if nobody changed it meanwhile.
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(s.catalog),
			Item:                      map[string]types.AttributeValue{catalogKey: catalogID(spec.Name), attrSpec: specAttr(spec)},
			ConditionExpression:       aws.String("#s = :old"),
			ExpressionAttributeNames:  map[string]string{"#s": attrSpec},
			ExpressionAttributeValues: map[string]types.AttributeValue{":old": oldItem[attrSpec]},
		})
		if err == nil {
			return nil
		}
		if !isConditionFailed(err) {
			return mapErr(ctx, "create "+spec.Name, err)
		}
	}
	return store.Errorf(store.ErrUnavailable, "create %s: catalog entry keeps changing", spec.Name)
}

// physicalExists reports whether the DynamoDB table exists in any state but
// DELETING.
func (s *Store) physicalExists(ctx context.Context, physical string) (bool, error) {
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(physical)})
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, mapErr(ctx, "describe "+physical, err)
	}
	return out.Table.TableStatus != types.TableStatusDeleting, nil
}

// createPhysical creates the DynamoDB table, tolerating one that exists
// (created by another process, or still being deleted: then it waits for the
// deletion and creates it again).
func (s *Store) createPhysical(ctx context.Context, spec store.TableSpec, physical string) error {
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(physical),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeB},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeB},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	}
	for _, ix := range spec.Indexes {
		col := spec.ValueIndex(ix.Column)
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(iName(col)), AttributeType: types.ScalarAttributeTypeB,
		})
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName: aws.String(lsiName(ix.Name)),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(iName(col)), KeyType: types.KeyTypeRange},
			},
			// The value and its expiry are all a lookup needs to verify an
			// entry; the rest of the row stays out of the index.
			Projection: &types.Projection{
				ProjectionType:   types.ProjectionTypeInclude,
				NonKeyAttributes: []string{vName(col), eName(col)},
			},
		})
	}
	for {
		_, err := s.client.CreateTable(ctx, in)
		if err == nil {
			break
		}
		if !isInUse(err) {
			return mapErr(ctx, "create "+spec.Name, err)
		}
		out, derr := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(physical)})
		if derr != nil && !isNotFound(derr) {
			return mapErr(ctx, "create "+spec.Name, derr)
		}
		if derr == nil && out.Table.TableStatus != types.TableStatusDeleting {
			break // exists: created by someone else with this spec
		}
		if err := s.waitTable(ctx, physical, true); err != nil {
			return err
		}
	}
	if err := s.waitTable(ctx, physical, false); err != nil {
		return err
	}
	if s.caps.NativeTTL {
		if _, err := s.enableTTL(ctx, physical); err != nil {
			return err
		}
	}
	return nil
}

func lsiName(index string) string { return "ix." + index }

// DropTable deletes the DynamoDB table, waits until it is gone and removes
// its catalog entry; see store.Store.
func (s *Store) DropTable(ctx context.Context, name string) error {
	ctx, cancel, done, err := s.core.BeginDrop(ctx, name)
	if done || err != nil {
		return err
	}
	defer cancel()
	physical := s.physicalName(name)
	s.tables.Forget(name)
	for {
		_, err := s.client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(physical)})
		if err == nil || isNotFound(err) {
			break
		}
		if !isInUse(err) {
			return mapErr(ctx, "drop "+name, err)
		}
		// Being created, updated or already deleted: once it settles
		// (or is gone) delete it again.
		if err := backoff.Sleep(ctx, s.poll); err != nil {
			return fmt.Errorf("drop %s: %w: %w", name, store.ErrUnavailable, err)
		}
	}
	if err := s.waitTable(ctx, physical, true); err != nil {
		return err
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.catalog),
		Key:       map[string]types.AttributeValue{catalogKey: catalogID(name)},
	})
	if err != nil {
		return mapErr(ctx, "drop "+name, err)
	}
	s.tables.Forget(name)
	return nil
}

// Tables lists the catalog's tables that exist on the service; see
// store.Store. State is the service's; capacity is the last one set through
// SetCapacity.
func (s *Store) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	existing := map[string]bool{}
	var start *string
	for {
		if err := ctx.Err(); err != nil {
			return nil, mapErr(ctx, "list tables", err)
		}
		out, err := s.client.ListTables(ctx, &dynamodb.ListTablesInput{ExclusiveStartTableName: start})
		if err != nil {
			return nil, mapErr(ctx, "list tables", err)
		}
		for _, n := range out.TableNames {
			existing[n] = true
		}
		if out.LastEvaluatedTableName == nil {
			break
		}
		start = out.LastEvaluatedTableName
	}
	var infos []store.TableInfo
	in := &dynamodb.ScanInput{TableName: aws.String(s.catalog), ConsistentRead: aws.Bool(true)}
	for {
		if err := ctx.Err(); err != nil {
			return nil, mapErr(ctx, "list tables", err)
		}
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return nil, mapErr(ctx, "list tables", err)
		}
		for _, item := range out.Items {
			id, _ := item[catalogKey].(*types.AttributeValueMemberS)
			if id == nil || !strings.HasPrefix(id.Value, "t.") {
				continue
			}
			e, err := decodeEntry(item)
			if err != nil {
				return nil, err
			}
			if !strings.HasPrefix(e.spec.Name, prefix) || !existing[s.physicalName(e.spec.Name)] {
				continue
			}
			infos = append(infos, store.TableInfo{Spec: e.spec, State: store.Active, Capacity: e.capacity, Switches: store.SwitchTimes(e.switches),
				Class: e.class, ClassChanges: store.SwitchTimes(e.classChanges)})
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	slices.SortFunc(infos, func(a, b store.TableInfo) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	return infos, nil
}

package dynamo

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

var _ store.Store = (*Store)(nil)

const (
	// maxTransactItems is TransactWriteItems' action limit.
	maxTransactItems = 100
	// maxTransactBytes is TransactWriteItems' aggregate size limit.
	maxTransactBytes = 4 << 20
	// batchWriteItems is BatchWriteItem's request limit.
	batchWriteItems = 25
)

// Store is a store.Store on the DynamoDB API.
type Store struct {
	client  *dynamodb.Client
	http    idleCloser // owned when the Store built the client; nil otherwise
	opts    Options
	now     func() time.Time
	log     *slog.Logger
	caps    store.Capabilities
	catalog string // physical name of the catalog table
	core    *remote.Core
	retry   retryPolicy
	// poll is the interval of waits for table state changes.
	poll time.Duration

	metrics *metrics

	tables *remote.Tables[*table] // spec cache, by logical name
}

// table is a cached catalog entry.
type table struct {
	spec     store.TableSpec
	physical string
}

func (t *table) TableSpec() store.TableSpec { return t.spec }

// Open connects to a DynamoDB API endpoint, creates the catalog table if it
// is missing and probes what the endpoint supports (transactions, native
// TTL, warm throughput).
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	client := opts.Client
	var httpClient idleCloser
	if client == nil {
		var err error
		if client, httpClient, err = newClient(ctx, opts); err != nil {
			return nil, err
		}
	}
	m := newMetrics()
	// Every call is counted and timed, whoever built the client. Latency is
	// measured on the real clock, not the injected one.
	client = dynamodb.New(client.Options(), m.instrument(time.Now))
	s := &Store{
		client:  client,
		http:    httpClient,
		metrics: m,
		opts:    opts,
		now:     opts.Now,
		log:     opts.Logger,
		catalog: opts.TablePrefix + "ebb.catalog",
		core:    remote.NewCore(opts.Common, ""),
		retry:   retryPolicy{Policy: opts.RetryPolicy(retryBase), onRetry: m.unprocess.Inc},
		poll:    250 * time.Millisecond,
		caps: store.Capabilities{
			Backend:               "dynamodb",
			MaxRowBytes:           maxRowBytes,
			DeleteBatch:           batchWriteItems,
			SharedAcrossProcesses: true,
			Switches:              switchLimit,
			Classes:               classLimit,
		},
	}
	s.tables = remote.NewTables(s.core, s.loadTable, mapErr)
	if isLoopback(opts.Endpoint) {
		s.poll = 20 * time.Millisecond
	}
	tctx, cancel := context.WithTimeout(ctx, opts.TableTimeout)
	defer cancel()
	if err := s.ensureCatalog(tctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.probe(tctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.log.Info("dynamodb store open", "endpoint", opts.Endpoint, "table_prefix", opts.TablePrefix,
		"atomic_batch", s.caps.AtomicPartitionBatch, "native_ttl", s.caps.NativeTTL,
		"warm_throughput", s.caps.WarmThroughput)
	return s, nil
}

// probe finds out what the endpoint supports. An operation the endpoint does
// not know (emulators and Alternator lack some) turns a capability off; any
// other failure fails Open.
func (s *Store) probe(ctx context.Context) error {
	// Transactions: a one-action transaction that writes a probe document.
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(s.catalog),
			Item:      map[string]types.AttributeValue{catalogKey: &types.AttributeValueMemberS{Value: "probe.transactions"}},
		}}},
	})
	switch {
	case err == nil:
		s.caps.AtomicPartitionBatch, s.caps.MaxAtomicBatch = true, maxTransactItems
	case isUnknownOperation(err) || isCode(err, "ValidationException"):
		s.log.Info("dynamodb endpoint has no TransactWriteItems: batches are not atomic", "err", err)
	default:
		return mapErr(ctx, "dynamo: probe transactions", err)
	}

	// Native TTL: switched on for the catalog (whose items carry no TTL
	// attribute, so nothing there ever expires) to learn whether it works,
	// unless the caller keeps it off.
	if s.opts.NoNativeTTL {
		s.log.Info("native TTL left off (NoNativeTTL): expired rows stay until swept")
	} else if err := s.probeTTL(ctx); err != nil {
		return err
	}

	// Warm throughput: AWS reports it in every table description.
	out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.catalog)})
	if err != nil {
		return mapErr(ctx, "dynamo: describe catalog", err)
	}
	s.caps.WarmThroughput = out.Table.WarmThroughput != nil
	return nil
}

// probeTTL finds out whether the endpoint has native TTL, switching it on
// for the catalog.
func (s *Store) probeTTL(ctx context.Context) error {
	d, err := s.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.catalog)})
	if err != nil && !isUnknownOperation(err) {
		return mapErr(ctx, "dynamo: probe TTL", err)
	}
	if err == nil && d.TimeToLiveDescription != nil &&
		(d.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabled ||
			d.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		s.caps.NativeTTL = true
	} else {
		s.caps.NativeTTL, err = s.enableTTL(ctx, s.catalog)
	}
	return err
}

// enableTTL switches native TTL on for a table; supported is false when the
// endpoint does not implement it.
func (s *Store) enableTTL(ctx context.Context, physical string) (supported bool, err error) {
	_, err = s.client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(physical),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true),
		},
	})
	switch {
	case err == nil:
		return true, nil
	case isUnknownOperation(err):
		s.log.Info("dynamodb endpoint has no native TTL: expired rows stay until swept", "err", err)
		return false, nil
	case isCode(err, "ValidationException") && strings.Contains(strings.ToLower(errMessage(err)), "already enabled"):
		return true, nil
	}
	return false, mapErr(ctx, "dynamo: enable TTL on "+physical, err)
}

// Client returns the SDK client, for tools and tests that need raw access
// (baselines, cleanup of test tables).
func (s *Store) Client() *dynamodb.Client { return s.client }

// TablePrefix returns the prefix of the Store's physical table names.
func (s *Store) TablePrefix() string { return s.opts.TablePrefix }

// Capabilities reports what the endpoint supports, as probed at Open.
func (s *Store) Capabilities() store.Capabilities { return s.caps }

// Close marks the Store closed and closes its idle connections. Calls
// already under way finish (each is bounded by its timeout). Closing again
// closes the idle connections again: raw calls through Client after Close
// (a test's cleanup, say) leave some.
func (s *Store) Close() error {
	s.core.Close()
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
	return nil
}

// begin starts a data operation and beginTable one on tables, which
// waits for the service; remote.Core bounds each by its timeout.
func (s *Store) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	return s.core.Begin(ctx)
}
func (s *Store) beginTable(ctx context.Context) (context.Context, context.CancelFunc, error) {
	return s.core.BeginTable(ctx)
}

// physicalName maps a table name to its DynamoDB name: the prefix, then the
// name, padded with '.' to DynamoDB's 3-character minimum ('.' never
// appears in ebb names, so the mapping is one to one).
func (s *Store) physicalName(name string) string {
	p := s.opts.TablePrefix + name
	for len(p) < 3 {
		p += "."
	}
	return p
}

// waitTable polls DescribeTable until the table is ACTIVE (gone = false) or
// no longer exists (gone = true).
func (s *Store) waitTable(ctx context.Context, physical string, gone bool) error {
	for {
		out, err := s.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(physical)})
		switch {
		case err != nil && isNotFound(err):
			if gone {
				return nil
			}
			return store.Errorf(store.ErrTableNotFound, "%s vanished while waiting for it", physical)
		case err != nil:
			return mapErr(ctx, "wait for "+physical, err)
		case !gone && out.Table.TableStatus == types.TableStatusActive:
			return nil
		}
		if err := backoff.Sleep(ctx, s.poll); err != nil {
			return fmt.Errorf("wait for %s: %w: %w", physical, store.ErrUnavailable, err)
		}
	}
}

package dynamo

import (
	"context"
	"errors"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics count DynamoDB API calls by operation and outcome
// (remote.Metrics), and the re-sends of unprocessed batch items, so
// throttling and outages show up on /metrics before users notice them.
// They live on the Store (no globals) and are exported through Collector.
type metrics struct {
	*remote.Metrics
	unprocess prometheus.Counter
}

func newMetrics() *metrics {
	unprocess := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ebb_dynamodb_unprocessed_retries_total",
		Help: "BatchWriteItem requests re-sent for items the service left unprocessed.",
	})
	return &metrics{
		Metrics: remote.NewMetrics("dynamodb",
			"DynamoDB API calls (after the SDK's retries) by operation and outcome.",
			"Duration of DynamoDB API calls, retries included.", unprocess),
		unprocess: unprocess,
	}
}

// Collector returns a Prometheus collector for the Store's request
// metrics. Register it on the registry of the caller's choosing.
func (s *Store) Collector() prometheus.Collector { return s.metrics }

// outcome classifies a call's result for the requests counter.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if isConditionFailed(err) {
		return "condition_failed"
	}
	mapped := mapErr(context.Background(), "", err)
	for _, c := range []struct {
		err  error
		name string
	}{
		{store.ErrThrottled, "throttled"}, {store.ErrTableNotFound, "not_found"},
		{store.ErrTooLarge, "too_large"}, {store.ErrInvalid, "invalid"}, {store.ErrUnavailable, "unavailable"},
	} {
		if errors.Is(mapped, c.err) {
			return c.name
		}
	}
	return "error"
}

// instrument returns a client option that times and counts every call at
// the initialize step, which wraps the SDK's retries.
func (m *metrics) instrument(now func() time.Time) func(*dynamodb.Options) {
	mw := middleware.InitializeMiddlewareFunc("ebbMetrics", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		start := now()
		out, md, err := next.HandleInitialize(ctx, in)
		op := awsmiddleware.GetOperationName(ctx)
		m.Observe(op, outcome(err), now().Sub(start))
		return out, md, err
	})
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(mw, middleware.After)
		})
	}
}
